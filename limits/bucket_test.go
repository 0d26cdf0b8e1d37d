package limits_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/testclock"
	"github.com/tollgate-auth/tollgate/limits"
)

// base is the fixed instant every test counts from (testclock.Epoch); at and
// ms are base+d as a time and in Unix milliseconds.
var (
	base = testclock.Epoch
	at   = testclock.At
	ms   = testclock.Ms
)

// takeStep is one row of a bucket's step table: Take at base+at, then expect
// the decision, the state (the TAT as an offset from base) and the TTL.
type takeStep struct {
	name    string
	at      time.Duration
	want    limits.Decision
	wantTAT time.Duration
	wantTTL time.Duration
}

var allowed = limits.Decision{Allowed: true}

func refused(w time.Duration) limits.Decision { return limits.Decision{Wait: w} }

// runTakes runs a step table against one bucket from tat and returns the
// final state.
func runTakes(t *testing.T, b limits.Bucket, tat int64, steps []takeStep) int64 {
	t.Helper()
	for _, st := range steps {
		now := at(st.at)
		before := tat
		var d limits.Decision
		tat, d = b.Take(tat, now)
		if d != st.want {
			t.Errorf("%s: Take = %+v, want %+v", st.name, d, st.want)
		}
		if !d.Allowed && tat != before {
			t.Errorf("%s: a refused Take changed the state from %d to %d", st.name, before, tat)
		}
		if want := ms(st.wantTAT); tat != want {
			t.Errorf("%s: TAT = %+dms, want %v", st.name, tat-ms(0), st.wantTAT)
		}
		if got := b.TTL(tat, now); got != st.wantTTL {
			t.Errorf("%s: TTL = %v, want %v", st.name, got, st.wantTTL)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	return tat
}

func TestBucket_BurstThenRefill(t *testing.T) {
	b := limits.Bucket{Interval: 100 * time.Millisecond, Burst: 3}
	const I = 100 * time.Millisecond
	tat := runTakes(t, b, 0, []takeStep{
		{"t=+0s: 1 of 3", 0, allowed, I, I},
		{"t=+0s: 2 of 3", 0, allowed, 2 * I, 2 * I},
		{"t=+0s: 3 of 3", 0, allowed, 3 * I, 3 * I},
		{"t=+0s: 4th refused for one interval", 0, refused(I), 3 * I, 3 * I},
		{"t=+0s: hammering changes nothing", 0, refused(I), 3 * I, 3 * I},
		{"t=+50ms: half an interval left", 50 * time.Millisecond, refused(50 * time.Millisecond), 3 * I, 250 * time.Millisecond},
		{"t=+99ms: 1ms left", 99 * time.Millisecond, refused(time.Millisecond), 3 * I, 201 * time.Millisecond},
		{"t=+100ms: one token back", I, allowed, 4 * I, 3 * I},
		{"t=+100ms: and only one", I, refused(I), 4 * I, 3 * I},
		{"t=+250ms: one more", 250 * time.Millisecond, allowed, 5 * I, 250 * time.Millisecond},
		{"t=+300ms: the token of 200ms is there", 300 * time.Millisecond, allowed, 6 * I, 3 * I},
		{"t=+300ms: empty again", 300 * time.Millisecond, refused(I), 6 * I, 3 * I},
		{"t=+600ms: bucket full again", 600 * time.Millisecond, allowed, 7 * I, I},
	})
	// A long idle refills to the burst, never more.
	runTakes(t, b, tat, []takeStep{
		{"t=+1h: 1 of 3", time.Hour, allowed, time.Hour + I, I},
		{"t=+1h: 2 of 3", time.Hour, allowed, time.Hour + 2*I, 2 * I},
		{"t=+1h: 3 of 3", time.Hour, allowed, time.Hour + 3*I, 3 * I},
		{"t=+1h: an hour idle still gives only 3", time.Hour, refused(I), time.Hour + 3*I, 3 * I},
	})
}

func TestBucket_BurstOne(t *testing.T) {
	b := limits.Bucket{Interval: time.Second, Burst: 1}
	runTakes(t, b, 0, []takeStep{
		{"t=+0s: allowed", 0, allowed, time.Second, time.Second},
		{"t=+0s: refused", 0, refused(time.Second), time.Second, time.Second},
		{"t=+999ms: refused", 999 * time.Millisecond, refused(time.Millisecond), time.Second, time.Millisecond},
		{"t=+1s: allowed", time.Second, allowed, 2 * time.Second, time.Second},
		{"t=+5s: allowed", 5 * time.Second, allowed, 6 * time.Second, time.Second},
	})
}

// TestBucket_DefaultIPRate: 100 at once, then 10 per second sustained.
func TestBucket_DefaultIPRate(t *testing.T) {
	b := limits.Bucket{Interval: 100 * time.Millisecond, Burst: 100}
	var tat int64
	var d limits.Decision
	n := 0
	for ; n < 1000; n++ {
		if tat, d = b.Take(tat, at(0)); !d.Allowed {
			break
		}
	}
	if n != 100 {
		t.Fatalf("a flood at one instant got %d through, want 100", n)
	}
	if want := refused(100 * time.Millisecond); d != want {
		t.Errorf("the 101st Take = %+v, want %+v", d, want)
	}
	// Then one take every 10ms for 10s: 10 per second get through.
	got := 0
	for i := 1; i <= 1000; i++ {
		if tat, d = b.Take(tat, at(time.Duration(i)*10*time.Millisecond)); d.Allowed {
			got++
		}
	}
	if got != 100 {
		t.Errorf("sustained flood for 10s got %d through, want 100", got)
	}
}

func TestBucket_TTL(t *testing.T) {
	b := limits.Bucket{Interval: time.Second, Burst: 5}
	tests := []struct {
		name string
		tat  int64
		at   time.Duration
		want time.Duration
	}{
		{"empty state", 0, 0, 0},
		{"TAT in the future", ms(3 * time.Second), 0, 3 * time.Second},
		{"TAT now", ms(0), 0, 0},
		{"TAT passed", ms(-time.Second), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := b.TTL(tt.tat, at(tt.at)); got != tt.want {
				t.Errorf("TTL(%d) = %v, want %v", tt.tat, got, tt.want)
			}
		})
	}
	// Once TTL has passed, dropping the state changes nothing: the bucket
	// answers as a fresh one.
	tat := ms(0)
	for range 3 {
		tat, _ = b.Take(tat, at(0))
	}
	after := at(0).Add(b.TTL(tat, at(0)))
	kept, d1 := b.Take(tat, after)
	fresh, d2 := b.Take(0, after)
	if d1 != d2 || kept != fresh {
		t.Errorf("at now+TTL the kept state gives %d %+v, a fresh one %d %+v", kept, d1, fresh, d2)
	}
}

func TestBucket_Validate(t *testing.T) {
	tests := []struct {
		name    string
		b       limits.Bucket
		wantErr string
	}{
		{"10 per second, burst 100", limits.Bucket{Interval: 100 * time.Millisecond, Burst: 100}, ""},
		{"1ms, burst 1", limits.Bucket{Interval: time.Millisecond, Burst: 1}, ""},
		{"one a day", limits.Bucket{Interval: 24 * time.Hour, Burst: 3}, ""},
		{"zero interval", limits.Bucket{Interval: 0, Burst: 1}, "interval"},
		{"negative interval", limits.Bucket{Interval: -time.Second, Burst: 1}, "interval"},
		{"sub-millisecond interval", limits.Bucket{Interval: 500 * time.Microsecond, Burst: 1}, "interval"},
		{"interval not whole ms", limits.Bucket{Interval: 1500 * time.Microsecond, Burst: 1}, "interval"},
		{"zero burst", limits.Bucket{Interval: time.Second, Burst: 0}, "burst"},
		{"negative burst", limits.Bucket{Interval: time.Second, Burst: -1}, "burst"},
		{"zero bucket", limits.Bucket{}, "interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("%+v.Validate() = %v, want nil", tt.b, err)
			case tt.wantErr != "" && err == nil:
				t.Errorf("%+v.Validate() = nil, want an error about %s", tt.b, tt.wantErr)
			case err != nil && (!strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "limits: ")):
				t.Errorf("%+v.Validate() = %q, want a limits: error about %s", tt.b, err, tt.wantErr)
			}
		})
	}
}

// TestBucket_ValidBucketsAllowTheFirstTake: whatever Validate accepts lets a
// fresh bucket's first request through.
func TestBucket_ValidBucketsAllowTheFirstTake(t *testing.T) {
	tests := []limits.Bucket{
		{Interval: 3 * time.Millisecond, Burst: 1 << 62},       // 3×2^62 wraps to −2^62
		{Interval: time.Second, Burst: 18_446_744_073_709_552}, // ⌈2^64/1000⌉×1000 wraps to 384
		{Interval: 100 * time.Millisecond, Burst: 100},         // sanity: the default
	}
	for _, b := range tests {
		if b.Validate() != nil {
			continue // rejecting it is a fix too
		}
		if _, d := b.Take(0, at(0)); !d.Allowed {
			t.Errorf("%+v: Validate() = nil, but the first Take on a fresh bucket = %+v", b, d)
		}
	}
}

// checkTakes runs Take at the given times and checks, for every pair of
// allowed requests, that the ones in [t, t+d] number at most Burst +
// d/Interval; that a refused Take's Wait is exact; and the per-step
// invariants.
func checkTakes(b limits.Bucket, times []time.Duration) string {
	var tat int64
	var allowedAt []int64
	interval := b.Interval.Milliseconds()
	for i, off := range times {
		now := at(off)
		nowMS := now.UnixMilli()
		next, d := b.Take(tat, now)
		where := fmt.Sprintf("step %d: Take(%d) at +%v = %d, %+v", i, tat-ms(0), off, next-ms(0), d)
		switch {
		case d.Allowed && d.Wait != 0:
			return where + ": allowed with a wait"
		case d.Allowed && next != max(tat, nowMS)+interval:
			return where + ": allowed, but the TAT did not move by one interval"
		case !d.Allowed && next != tat:
			return where + ": refused, but the state changed"
		case !d.Allowed && (d.Wait <= 0 || d.Wait > b.Interval):
			return where + ": refused with a wait outside (0, interval]"
		case b.TTL(next, now) < 0 || b.TTL(next, now).Milliseconds() > int64(b.Burst)*interval:
			return where + ": TTL outside [0, burst×interval]"
		}
		if !d.Allowed {
			// The wait is exact: 1ms earlier is still refused, at the wait a
			// token is there.
			if _, d2 := b.Take(tat, now.Add(d.Wait-time.Millisecond)); d2.Allowed {
				return where + ": allowed 1ms before the wait was over"
			}
			if _, d2 := b.Take(tat, now.Add(d.Wait)); !d2.Allowed {
				return where + ": still refused when the wait was over"
			}
		}
		if d.Allowed {
			allowedAt = append(allowedAt, nowMS)
		}
		tat = next
	}
	for i := range allowedAt {
		for j := i; j < len(allowedAt); j++ {
			d := allowedAt[j] - allowedAt[i]
			if n, limit := int64(j-i+1), int64(b.Burst)+d/interval; n > limit {
				return fmt.Sprintf("%d allowed within %dms, over burst %d + %dms/%dms = %d", n, d, b.Burst, d, interval, limit)
			}
		}
	}
	return ""
}

func TestBucket_NeverMoreThanBurstPlusRate(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := 0; i < 300; i++ {
		b := limits.Bucket{Interval: time.Duration(1+r.IntN(1000)) * time.Millisecond, Burst: 1 + r.IntN(20)}
		times := make([]time.Duration, 200)
		var off time.Duration
		for j := range times {
			switch r.IntN(4) {
			case 0: // same instant
			case 1:
				off += time.Duration(r.IntN(int(b.Interval.Milliseconds())+1)) * time.Millisecond
			case 2:
				off += time.Duration(r.IntN(10)) * time.Millisecond
			default:
				off += time.Duration(r.IntN(int(b.Interval.Milliseconds())*int(b.Burst)*2+1)) * time.Millisecond
			}
			times[j] = off
		}
		if err := checkTakes(b, times); err != "" {
			t.Fatalf("%+v: %s", b, err)
		}
	}
}

func FuzzBucket(f *testing.F) {
	f.Add(int64(100), 3, []byte{0, 0, 0, 0, 50, 50, 100, 0, 255})
	f.Add(int64(1), 1, []byte{1, 1, 0, 2, 0})
	f.Add(int64(86_400_000), 100, []byte{0, 0, 255, 255, 255})
	f.Fuzz(func(t *testing.T, intervalMS int64, burst int, gaps []byte) {
		b := limits.Bucket{Interval: time.Duration(intervalMS) * time.Millisecond, Burst: burst}
		// Sizes far beyond any config (see TestBucket_ValidBucketsAllowTheFirstTake).
		if b.Validate() != nil || intervalMS > 1<<31 || burst > 1<<20 || len(gaps) > 300 {
			t.Skip()
		}
		times := make([]time.Duration, len(gaps))
		var off time.Duration
		for i, g := range gaps {
			// Gaps scale with the interval so that refills happen.
			off += time.Duration(g) * b.Interval / 64
			times[i] = off.Truncate(time.Millisecond)
		}
		if err := checkTakes(b, times); err != "" {
			t.Fatalf("%+v: %s", b, err)
		}
	})
}
