package limits_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/limits"
)

func TestBucket_BurstThenRefill(t *testing.T) {
	b := limits.Bucket{Interval: 100 * time.Millisecond, Burst: 3}
	const I = 100 * time.Millisecond
	tat := runSteps(t, b, 0, []step{
		{"t=+0s: first call on the zero state, 1 of 3", 0, 1, allow(2, I)},
		{"t=+0s: 2 of 3", 0, 1, allow(1, 2*I)},
		{"t=+0s: 3 of 3", 0, 1, allow(0, 3*I)},
		{"t=+0s: 4th refused for one interval", 0, 1, refuse(0, I, 3*I)},
		{"t=+0s: hammering changes nothing", 0, 1, refuse(0, I, 3*I)},
		{"t=+50ms: half an interval left", 50 * time.Millisecond, 1, refuse(0, 50*time.Millisecond, 250*time.Millisecond)},
		{"t=+99ms: 1ms left", 99 * time.Millisecond, 1, refuse(0, time.Millisecond, 201*time.Millisecond)},
		{"t=+100ms: one token back", I, 1, allow(0, 3*I)},
		{"t=+100ms: and only one", I, 1, refuse(0, I, 3*I)},
		{"t=+250ms: one more", 250 * time.Millisecond, 1, allow(0, 250*time.Millisecond)},
		{"t=+300ms: the token of 200ms is there", 300 * time.Millisecond, 1, allow(0, 3*I)},
		{"t=+300ms: empty again", 300 * time.Millisecond, 1, refuse(0, I, 3*I)},
		{"t=+600ms: bucket full again", 600 * time.Millisecond, 1, allow(2, I)},
	})
	// A long idle refills to the burst, never more.
	runSteps(t, b, tat, []step{
		{"t=+1h: 1 of 3", time.Hour, 1, allow(2, I)},
		{"t=+1h: 2 of 3", time.Hour, 1, allow(1, 2*I)},
		{"t=+1h: 3 of 3", time.Hour, 1, allow(0, 3*I)},
		{"t=+1h: an hour idle still gives only 3", time.Hour, 1, refuse(0, I, 3*I)},
	})
}

func TestBucket_CostRefillsAfterPartialWaits(t *testing.T) {
	b := limits.Bucket{Interval: 100 * time.Millisecond, Burst: 5}
	const I = 100 * time.Millisecond
	runSteps(t, b, 0, []step{
		{"t=+0s: first call on the zero state, cost 2", 0, 2, allow(3, 2*I)},
		{"t=+0s: cost 3 empties the bucket", 0, 3, allow(0, 5*I)},
		{"t=+0s: empty: one token takes an interval", 0, 1, refuse(0, I, 5*I)},
		{"t=+0s: cost above the burst is never allowed", 0, 6, refuse(0, 0, 5*I)},
		{"t=+0s: cost 0 is never allowed", 0, 0, refuse(0, 0, 5*I)},
		// At +150ms 1.5 tokens are back (TAT +500ms, 350ms to full): cost 2
		// needs 0.5 more.
		{"t=+150ms: partial refill: cost 2 waits 50ms", 150 * time.Millisecond, 2, refuse(1, 50*time.Millisecond, 350*time.Millisecond)},
		{"t=+150ms: cost 1 fits", 150 * time.Millisecond, 1, allow(0, 450*time.Millisecond)},
		// TAT +600ms: at +230ms 1.3 tokens are back.
		{"t=+230ms: the half token left over counts", 230 * time.Millisecond, 1, allow(0, 470*time.Millisecond)},
		// TAT +700ms: at +260ms 0.6 tokens are back.
		{"t=+260ms: cost 3 waits for 2.4 tokens", 260 * time.Millisecond, 3, refuse(0, 240*time.Millisecond, 440*time.Millisecond)},
		{"t=+500ms: the wait is over", 500 * time.Millisecond, 3, allow(0, 500*time.Millisecond)},
		{"t=+2s: full again after idle: the whole burst at once", 2 * time.Second, 5, allow(0, 5*I)},
	})
}

func TestBucket_BurstOne(t *testing.T) {
	b := limits.Bucket{Interval: time.Second, Burst: 1}
	runSteps(t, b, 0, []step{
		{"t=+0s: allowed", 0, 1, allow(0, time.Second)},
		{"t=+0s: refused", 0, 1, refuse(0, time.Second, time.Second)},
		{"t=+999ms: refused", 999 * time.Millisecond, 1, refuse(0, time.Millisecond, time.Millisecond)},
		{"t=+1s: allowed", time.Second, 1, allow(0, time.Second)},
		{"t=+5s: allowed", 5 * time.Second, 1, allow(0, time.Second)},
	})
}

// TestBucket_TakeIsTakeNOfOne: Take, which the engine calls, is TakeN with
// a cost of 1.
func TestBucket_TakeIsTakeNOfOne(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		b := limits.Bucket{Interval: time.Duration(1+r.IntN(1000)) * time.Millisecond, Burst: 1 + r.IntN(10)}
		tat, now := ms(time.Duration(r.IntN(10_000))*time.Millisecond), at(time.Duration(r.IntN(10_000))*time.Millisecond)
		s1, d1 := b.Take(tat, now)
		s2, d2 := b.TakeN(tat, now, 1)
		if s1 != s2 || d1 != d2 {
			t.Fatalf("%+v at %v: Take = %d %+v, TakeN(1) = %d %+v", b, now, s1, d1, s2, d2)
		}
	}
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
	if want := refuse(0, 100*time.Millisecond, 10*time.Second); d != want {
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
	runValidate(t, []validateCase{
		{"10 per second, burst 100", limits.Bucket{Interval: 100 * time.Millisecond, Burst: 100}, ""},
		{"1ms, burst 1", limits.Bucket{Interval: time.Millisecond, Burst: 1}, ""},
		{"one a day", limits.Bucket{Interval: 24 * time.Hour, Burst: 3}, ""},
		{"the largest burst, the longest fill", limits.Bucket{Interval: limits.MaxFillTime / limits.MaxBurst, Burst: limits.MaxBurst}, ""},
		{"the longest interval, the longest fill", limits.Bucket{Interval: 24 * time.Hour, Burst: 36500}, ""},
		{"fill over 100 years", limits.Bucket{Interval: 24 * time.Hour, Burst: 36501}, "burst"},
		{"the largest burst, 1 a day", limits.Bucket{Interval: 24 * time.Hour, Burst: limits.MaxBurst}, "burst"},
		{"zero interval", limits.Bucket{Interval: 0, Burst: 1}, "interval"},
		{"negative interval", limits.Bucket{Interval: -time.Second, Burst: 1}, "interval"},
		{"sub-millisecond interval", limits.Bucket{Interval: 500 * time.Microsecond, Burst: 1}, "interval"},
		{"interval not whole ms", limits.Bucket{Interval: 1500 * time.Microsecond, Burst: 1}, "interval"},
		{"interval over a day", limits.Bucket{Interval: 24*time.Hour + time.Millisecond, Burst: 1}, "interval"},
		{"zero burst", limits.Bucket{Interval: time.Second, Burst: 0}, "burst"},
		{"negative burst", limits.Bucket{Interval: time.Second, Burst: -1}, "burst"},
		{"burst over the maximum", limits.Bucket{Interval: time.Second, Burst: limits.MaxBurst + 1}, "burst"},
		{"zero bucket", limits.Bucket{}, "interval"},
	})
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

// bucket describes b to checkSteps, with a continuous token bucket as its
// model: a give-back puts its tokens back, up to Burst.
func bucket(b limits.Bucket) algorithm[int64] {
	return algorithm[int64]{l: b, limit: b.Burst, unit: b.Interval, model: func(results []result) string {
		// tokens is the bucket's content times Interval, in ms: full at the
		// first call, one token more per Interval, never more than Burst.
		interval := b.Interval.Milliseconds()
		full := int64(b.Burst) * interval
		tokens, last := full, int64(0)
		for i, r := range results {
			if i > 0 {
				tokens = min(full, tokens+r.ms-last)
			}
			last = r.ms
			if r.cost < 1 || r.cost > b.Burst {
				continue
			}
			need := int64(r.cost) * interval
			if r.give {
				tokens = min(full, tokens+need)
				if want := int(tokens / interval); r.d.Remaining != want {
					return fmt.Sprintf("call %d (give back %d at %d): Remaining = %d, but the bucket holds %d/%d tokens", i, r.cost, r.ms, r.d.Remaining, tokens, interval)
				}
				continue
			}
			if want := need <= tokens; r.d.Allowed != want {
				return fmt.Sprintf("call %d (cost %d at %d): allowed = %v, but the bucket holds %d/%d tokens", i, r.cost, r.ms, r.d.Allowed, tokens, interval)
			}
			if r.d.Allowed {
				tokens -= need
			} else if want := time.Duration(need-tokens) * time.Millisecond; r.d.Wait != want {
				return fmt.Sprintf("call %d (cost %d at %d): Wait = %v, but the tokens are back in %v", i, r.cost, r.ms, r.d.Wait, want)
			}
		}
		return ""
	}}
}

func TestBucket_Invariants(t *testing.T) {
	checkRandom(t, 11, 300, func(r *rand.Rand) algorithm[int64] {
		return bucket(limits.Bucket{Interval: randomUnit(r), Burst: randomLimit(r, limits.MaxBurst)})
	})
}

func FuzzBucket(f *testing.F) {
	fuzzAlgorithm(f, func(interval time.Duration, burst int) algorithm[int64] {
		return bucket(limits.Bucket{Interval: interval, Burst: burst})
	})
}

func TestBucket_GiveBackSteps(t *testing.T) {
	b := limits.Bucket{Interval: 100 * time.Millisecond, Burst: 3}
	const I = 100 * time.Millisecond
	tat := runMixed(t, b, 0, []mixedStep{
		{"t=+0s: take 2", 0, take(2), allow(1, 2*I)},
		{"t=+0s: give them back: full, the zero state", 0, give(2), allow(3, 0)},
		{"t=+0s: take 3", 0, take(3), allow(0, 3*I)},
		// TAT +300ms → +200ms: 1.5 tokens at +50ms.
		{"t=+50ms: give back 1", 50 * time.Millisecond, give(1), allow(1, 150*time.Millisecond)},
		{"t=+50ms: a cost above the burst gives back nothing", 50 * time.Millisecond, give(4), allow(1, 150*time.Millisecond)},
		{"t=+150ms: give back 2: full, not more", 150 * time.Millisecond, give(2), allow(3, 0)},
		{"t=+150ms: the whole burst", 150 * time.Millisecond, take(3), allow(0, 3*I)},
	})
	if want := ms(450 * time.Millisecond); tat != want {
		t.Errorf("TAT = %+dms, want +450ms", tat-ms(0))
	}
}

func FuzzBucket_GiveBackN(f *testing.F) {
	fuzzGiveBack(f, func(interval time.Duration, burst int) algorithm[int64] {
		return bucket(limits.Bucket{Interval: interval, Burst: burst})
	})
}
