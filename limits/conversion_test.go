package limits

import (
	"testing"
	"time"
)

// TestConversion_Steps: judged from MinVolume sends, refused while the
// verified share is below MinPercent, recovering with verifications and
// as sends age out.
func TestConversion_Steps(t *testing.T) {
	c := Conversion{Window: 10 * time.Second, MinVolume: 4, MinPercent: 25}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	at := func(s int) time.Time { return time.UnixMilli(int64(s) * 1000) }
	var s ConversionState
	var d Decision
	for i := range 4 {
		if s, d = c.TakeN(s, at(i), 1); !d.Allowed || d.Remaining != i+1 {
			t.Fatalf("send %d: %+v, want allowed with %d sent", i, d, i+1)
		}
	}
	if _, d = c.TakeN(s, at(4), 1); d.Allowed {
		t.Fatalf("a fifth send with none of 4 verified: %+v, want refused", d)
	}
	s, _ = c.Credit(s, at(4), 1)
	if s, d = c.TakeN(s, at(4), 1); !d.Allowed {
		t.Fatalf("1 of 4 verified is 25%%: %+v, want allowed", d)
	}
	if _, d = c.TakeN(s, at(5), 1); d.Allowed {
		t.Fatalf("1 of 5 verified is 20%%: %+v, want refused", d)
	}
	s, _ = c.GiveBackN(s, at(5), 1)
	if _, d = c.TakeN(s, at(5), 1); !d.Allowed {
		t.Fatalf("the fifth given back, 1 of 4 again: %+v, want allowed", d)
	}
	// At t=18 the first window (4 sent, 1 verified) weighs 0.2: 0.8 sent
	// estimated, 1.8 with this one, below 4.
	if _, d = c.TakeN(s, at(18), 1); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("most of the sends aged out: %+v, want allowed with 1 sent", d)
	}
	if c.TTL(s, at(5)) != 15*time.Second {
		t.Errorf("TTL %v, want 15s (the current window's end plus a window)", c.TTL(s, at(5)))
	}
	for _, bad := range []Conversion{{Window: 0, MinVolume: 1, MinPercent: 1}, {Window: time.Second, MinVolume: 0, MinPercent: 1}, {Window: time.Second, MinVolume: 1, MinPercent: 101}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

// FuzzConversion: for any parameters and steps on a clock that only moves
// forward, a refused send leaves the
// state as it was, a send given back at once restores the state, a credit
// never refuses, and the TTL is never negative nor longer than two windows.
func FuzzConversion(f *testing.F) {
	f.Add(int64(10_000), 4, 25, int64(0), []byte{0, 1, 2, 0, 3})
	f.Add(int64(1), 1, 100, int64(5), []byte{2, 2, 0, 0, 1})
	f.Fuzz(func(t *testing.T, windowMS int64, minVolume, minPercent int, start int64, steps []byte) {
		c := Conversion{Window: time.Duration(windowMS) * time.Millisecond, MinVolume: minVolume, MinPercent: minPercent}
		if c.Validate() != nil || len(steps) > 64 || start < 0 || start > 1<<50 {
			return // store clocks run from the epoch on
		}
		var s ConversionState
		now := start
		for _, b := range steps {
			now += int64(b>>2) * windowMS / 8
			at := time.UnixMilli(now)
			switch b & 3 {
			case 0, 1:
				next, d := c.TakeN(s, at, 1)
				if !d.Allowed && next != s {
					t.Fatalf("a refused send changed %+v to %+v", s, next)
				}
				if d.Allowed {
					back, _ := c.GiveBackN(next, at, 1)
					if cur := c.current(s, now); back != cur && !(back == ConversionState{} && cur == ConversionState{Start: cur.Start}) {
						t.Fatalf("send then give back at %d: %+v, want %+v", now, back, cur)
					}
				}
				s = next
			case 2:
				var d Decision
				if s, d = c.Credit(s, at, 1); !d.Allowed {
					t.Fatal("a credit refused")
				}
			case 3:
				s, _ = c.GiveBackN(s, at, 1)
			}
			if ttl := c.TTL(s, at); ttl < 0 || ttl > 2*c.Window {
				t.Fatalf("TTL %v for window %v", ttl, c.Window)
			}
		}
	})
}
