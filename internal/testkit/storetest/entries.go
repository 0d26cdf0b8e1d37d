package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// testEntrySteps holds a store's entry sets (authguard.EntryStore) to
// their contract: records expire on their own, a set holds at most max
// unexpired records (a replaced one is not a new one), removal says
// whether the record was there, and sets are independent.
func testEntrySteps(t *testing.T, newStore NewStore) {
	clock := testclock.New(time.Time{})
	st := newStore(t, clock)
	defer st.Close()
	es, ok := st.(authguard.EntryStore)
	if !ok {
		t.Fatalf("%T is not an authguard.EntryStore", st)
	}
	ctx := context.Background()
	const key, other = "tg:t:_admin:entries:v1", "tg:u:_admin:entries:v1"
	list := func(name, key string, want ...string) {
		t.Helper()
		got, err := es.Entries(ctx, key)
		if err != nil {
			t.Fatalf("%s: Entries: %v", name, err)
		}
		slices.Sort(got)
		want = slices.Sorted(slices.Values(want))
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s: Entries = %q, want %q", name, got, want)
		}
	}
	put := func(name, key, id, value string, ttl time.Duration, want error) {
		t.Helper()
		if err := es.PutEntry(ctx, key, id, value, ttl, 2); !errors.Is(err, want) {
			t.Errorf("%s: PutEntry = %v, want %v", name, err, want)
		}
	}
	remove := func(name, id string, want bool) {
		t.Helper()
		got, err := es.RemoveEntry(ctx, key, id)
		if err != nil || got != want {
			t.Errorf("%s: RemoveEntry = %v, %v; want %v", name, got, err, want)
		}
	}
	list("t=0: empty", key)
	put("t=0: a for 10s", key, "a", `{"a":1}`, 10*time.Second, nil)
	put("t=0: b for 1m", key, "b", "b|with a bar", time.Minute, nil)
	list("t=0: both", key, `{"a":1}`, "b|with a bar")
	put("t=0: c past max", key, "c", "c", time.Minute, authguard.ErrTooManyEntries)
	put("t=0: a replaced is no new record", key, "a", "a2", 10*time.Second, nil)
	list("t=0: a replaced", key, "a2", "b|with a bar")
	put("t=0: another set is apart", other, "a", "u", time.Minute, nil)

	clock.Advance(10 * time.Second)
	list("t=10s: a expired", key, "b|with a bar")
	put("t=10s: c fits again", key, "c", "c", time.Minute, nil)
	remove("t=10s: remove b", "b", true)
	remove("t=10s: remove b again", "b", false)
	remove("t=10s: remove what never was", "zz", false)
	list("t=10s: c left", key, "c")
	list("t=10s: the other set", other, "u")

	clock.Advance(time.Minute)
	list("t=70s: all expired", key)
	remove("t=70s: an expired record was not there", "c", false)
}
