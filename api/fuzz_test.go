package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// fuzzSeeds are bodies for both routes: valid ones and every bad-input
// shape of TestBadInput.
var fuzzSeeds = []string{
	`{"flow":"login","account":"alice@example.com","ip":"203.0.113.7"}`,
	`{"flow":"login","account":"alice@example.com","ip":"203.0.113.7","outcome":"failure"}`,
	`{"flow":"otp_verify","account":"+14155550123","ip":"2001:db8::1","device_token":null,"captcha_solved":true,"password_fingerprint":"x"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","outcome":"success","attempt":"eyJhbGciOiJIUzI1NiJ9.e30.x"}`,
	`{"flow":"login",`,
	``,
	`[]`,
	`null`,
	`"flow"`,
	`{"flow":"login","account":"a","ip":"192.0.2.1"} {}`,
	"{\"flow\":\"login\",\"account\":\"\xff\",\"ip\":\"192.0.2.1\"}",
	`{"flow":1,"account":"a","ip":"192.0.2.1"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","captcha_solved":"yes"}`,
	`{"account":"a","ip":"192.0.2.1"}`,
	`{"flow":"login","account":null,"ip":"192.0.2.1"}`,
	`{"flow":"login","account":"","ip":"192.0.2.1"}`,
	`{"flow":"login","account":"a\u0000","ip":"192.0.2.1"}`,
	`{"flow":"login","account":"a","ip":"fe80::1%eth0"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1:80"}`,
	`{"flow":"signup","account":"a","ip":"192.0.2.1"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","outcome":"maybe"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","extra":1}`,
	`{"flow":"login","account":"a","account":"b","ip":"192.0.2.1"}`,
	`{"Flow":"login","account":"a","ip":"192.0.2.1"}`,
	`{"flow":"login","account":"ＡＬＩＣＥ@example.com","ip":"::ffff:192.0.2.1"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","device_token":"` + strings.Repeat("x", 1025) + `"}`,
	`{"flow":"login","account":"` + strings.Repeat("ß", 200) + `","ip":"192.0.2.1"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","password_fingerprint":"` + strings.Repeat("x", 9000) + `"}`,
	`{"flow":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]],"account":"a","ip":"192.0.2.1"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","ref":"user-42"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","outcome":"success","ref":null}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","ref":"` + strings.Repeat("x", 129) + `"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","ref":"a\u0000\u001f\u007f\u0085"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","ref":["x"]}`,
	`{"destination":"+447400123456","channel":"sms","ip":"192.0.2.1","ref":"\ud800"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","ref":"user-\u202e42"}`,
	"{\"flow\":\"login\",\"account\":\"a\",\"ip\":\"192.0.2.1\",\"outcome\":\"success\",\"ref\":\"user-\u2066\u061c42\"}",
	`{"flow":"login","account":"a","ip":"192.0.2.1","ref":"مستخدم-42"}`,
}

// storeCalls wraps the harness's memory store and counts the calls that
// read or write it: a request refused before the engine acts makes none.
type storeCalls struct {
	*memstore.Store
	n atomic.Int64
}

func (c *storeCalls) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	c.n.Add(1)
	return c.Store.Do(ctx, ops)
}

func (c *storeCalls) DeleteMatching(ctx context.Context, pattern string) (int, error) {
	c.n.Add(1)
	return c.Store.DeleteMatching(ctx, pattern)
}

func (c *storeCalls) PutEntry(ctx context.Context, key, id, value string, ttl time.Duration, max int) error {
	c.n.Add(1)
	return c.Store.PutEntry(ctx, key, id, value, ttl, max)
}

func (c *storeCalls) RemoveEntry(ctx context.Context, key, id string) (bool, error) {
	c.n.Add(1)
	return c.Store.RemoveEntry(ctx, key, id)
}

// withStoreCalls has the engine call the harness's store through c.
func withStoreCalls(c *storeCalls) harnessOption {
	return func(hc *harnessConfig) {
		c.Store = hc.engine.Store.(*memstore.Store)
		hc.engine.Store = c
	}
}

// fuzzRoute sends body to path through the router and checks that the
// answer is never a 5xx, is a problem or a success openapi.yaml describes
// (the harness checks both), and that a refused request left the store as
// it was: the same keys and entries, no notice, and no store call at all
// unless the store itself refused (409 too-many-entries). seeds are added
// to fuzzSeeds.
func fuzzRoute(f *testing.F, path string, seeds ...string) {
	calls, notes := &storeCalls{}, &noticeRecorder{}
	h := newHarness(f, withStoreCalls(calls), withNotifier(notes))
	// A real attempt token, so the fuzzer can mutate one.
	v := h.check(f, login("seed@example.com", "192.0.2.200"))
	f.Add(`{"flow":"login","account":"seed@example.com","ip":"192.0.2.200","outcome":"failure","attempt":"` + v.Attempt + `"}`)
	if path == "/v1/report" {
		// A real step-up ticket, so the fuzzer can mutate one on the
		// step-up flow too.
		v := h.check(f, login("ticket@example.com", "192.0.2.201"))
		r := h.report(f, testkit.With(login("ticket@example.com", "192.0.2.201"), "outcome", "success", "attempt", v.Attempt, "breached", true))
		f.Add(`{"flow":"step_up","account":"ticket@example.com","ip":"192.0.2.201","outcome":"step_up_failed","attempt":"` + r.Attempt + `"}`)
		f.Add(`{"flow":"login","account":"seed@example.com","ip":"192.0.2.200","outcome":"failure","breached":true}`)
	}
	for _, s := range slices.Concat(fuzzSeeds, seeds) {
		f.Add(s)
	}
	entryIDs := func() []string {
		l, err := h.engine.ListEntries(context.Background(), "", "")
		if err != nil {
			f.Fatal(err)
		}
		ids := make([]string, len(l))
		for i := range l {
			ids[i] = l[i].ID
		}
		return ids
	}
	f.Fuzz(func(t *testing.T, body string) {
		before, beforeEntries, n, told := h.keys(), entryIDs(), calls.n.Load(), notes.len()
		res := h.do(t, http.MethodPost, path, "application/json", body)
		if res.status >= 500 {
			t.Fatalf("status %d for body %q: %s", res.status, body, res.body)
		}
		var m map[string]any
		if err := json.Unmarshal(res.body, &m); err != nil {
			t.Fatalf("response %q is not a JSON object: %v", res.body, err)
		}
		if res.status < 400 {
			if ref, ok := notes.refSince(told, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }); ok {
				// A notice's ref is shown to people: a control or
				// bidirectional formatting character in it could hide
				// or reverse what the alert says.
				t.Fatalf("an accepted request passed the ref %q to a notice", ref)
			}
			if res.specErr != nil && !strings.Contains(body, `\u`) {
				// The server accepted what the spec forbids. (Escapes are
				// exempt: the spec counts characters after decoding too,
				// but kin-openapi and the engine may disagree on
				// surrogates.)
				t.Errorf("the server accepted a request openapi.yaml rejects: %v", res.specErr)
			}
			return
		}
		if after := h.keys(); !slices.Equal(before, after) {
			t.Fatalf("refused request (%d) changed the store: %d keys before, %d after", res.status, len(before), len(after))
		}
		if after := entryIDs(); !slices.Equal(beforeEntries, after) {
			t.Fatalf("refused request (%d) changed the entries: %d before, %d after", res.status, len(beforeEntries), len(after))
		}
		if got := calls.n.Load() - n; got != 0 && res.status != http.StatusConflict {
			t.Fatalf("refused request (%d) made %d store calls", res.status, got)
		}
		if got := notes.len() - told; got != 0 {
			t.Fatalf("refused request (%d) emitted %d notices", res.status, got)
		}
	})
}

func FuzzCheckRequest(f *testing.F)  { fuzzRoute(f, "/v1/check") }
func FuzzReportRequest(f *testing.F) { fuzzRoute(f, "/v1/report") }

func FuzzSendRequest(f *testing.F) {
	fuzzRoute(f, "/v1/otp/send",
		`{"destination":"+447400123456","channel":"sms","ip":"192.0.2.1"}`,
		`{"flow":"otp_send","destination":"a@example.com","channel":"email","ip":"192.0.2.1","account":"a","device_token":null,"captcha_solved":true}`,
		`{"destination":"+1 415 555 0123","channel":"voice","ip":"2001:db8::1"}`,
		`{"destination":"+447400123456","channel":"pigeon","ip":"192.0.2.1"}`,
		`{"flow":"login","destination":"+447400123456","channel":"sms","ip":"192.0.2.1"}`,
		`{"destination":"","channel":"sms","ip":"192.0.2.1"}`,
	)
}

// adminSeeds are bodies of every admin route, valid and not.
var adminSeeds = []string{
	`{"flow":"login","account":"alice@example.com"}`,
	`{"flow":"login","ip":"203.0.113.7"}`,
	`{"flow":"login","account":""}`,
	`{"flow":"otp_send","destination":"+447400123456","channel":"sms"}`,
	`{"flow":"otp_verify","account":"a","destination":"+447400123456","channel":"sms"}`,
	`{"flow":"login","account":"alice@example.com","reason":"ticket 4711"}`,
	`{"flow":"login","account":"a","ip":"192.0.2.1","reason":"two subjects"}`,
	`{"flow":"login","ip":"192.0.2.1","reason":""}`,
	`{"ip_range":"203.0.113.0/24","expires_in":"1h","reason":"incident 92"}`,
	`{"flow":"login","ip_range":"2001:db8:77::/48","expires_in":"7d","reason":"r"}`,
	`{"destination_prefix":"+4477009","expires_in":"90m","reason":"r"}`,
	`{"country":"FR","action":"captcha","expires_in":"12h","reason":"r"}`,
	`{"country":"001","action":"block","expires_in":"30d","reason":"r"}`,
	`{"ip_range":"203.0.113.1/24","expires_in":"+1d","reason":"r"}`,
	`{"ip_range":"203.0.113.0/24","country":"FR","expires_in":"1h","reason":"r"}`,
	`{"id":"Hq3v0S2b1xY9nQe4a7LrVw","reason":"incident 92 closed"}`,
	`{"id":"","reason":"r"}`,
}

// fuzzAdminRoute is fuzzRoute for an admin route, with adminSeeds and the
// id of an entry that exists, for remove to find.
func fuzzAdminRoute(f *testing.F, path string) {
	h := newHarness(f)
	res := h.post(f, "/v1/admin/deny", map[string]any{"ip_range": "198.51.100.0/24", "expires_in": "1h", "reason": "seed"})
	var x wire.Entry
	if err := json.Unmarshal(res.body, &x); err != nil || x.ID == "" {
		f.Fatalf("deny: %d %s", res.status, res.body)
	}
	fuzzRoute(f, path, append(adminSeeds, `{"id":"`+x.ID+`","reason":"r"}`)...)
}

func FuzzExplainRequest(f *testing.F) { fuzzAdminRoute(f, "/v1/admin/explain") }
func FuzzResetRequest(f *testing.F)   { fuzzAdminRoute(f, "/v1/admin/reset") }
func FuzzAllowRequest(f *testing.F)   { fuzzAdminRoute(f, "/v1/admin/allow") }
func FuzzDenyRequest(f *testing.F)    { fuzzAdminRoute(f, "/v1/admin/deny") }
func FuzzRemoveRequest(f *testing.F)  { fuzzAdminRoute(f, "/v1/admin/remove") }
