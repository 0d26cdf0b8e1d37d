package backoff_test

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// base is the fixed instant every test counts from (testclock.Epoch); at and
// ms are base+d as a time and in Unix milliseconds.
var (
	base = testclock.Epoch
	at   = testclock.At
	ms   = testclock.Ms
)

// login is the shape of the default login policy, with a short cap so the
// tables stay readable.
var login = backoff.Policy{
	Free:        5,
	Base:        time.Second,
	Factor:      2,
	Max:         30 * time.Second,
	ForgetAfter: time.Hour,
}

// window is the "same wrong password once" window used by the step tables.
const window = 10 * time.Minute

func TestPolicy_Delay(t *testing.T) {
	tests := []struct {
		name     string
		p        backoff.Policy
		failures int
		want     time.Duration
	}{
		{"no failures", login, 0, 0},
		{"negative failures", login, -3, 0},
		{"one failure is free", login, 1, 0},
		{"Free-1 failures are free", login, 4, 0},
		{"after Free failures wait base", login, 5, time.Second},
		{"one beyond free doubles", login, 6, 2 * time.Second},
		{"two beyond free doubles again", login, 7, 4 * time.Second},
		{"just under the cap", login, 9, 16 * time.Second},
		{"32s is capped at 30s", login, 10, 30 * time.Second},
		{"far beyond the cap stays at max", login, 1000, 30 * time.Second},
		{"huge count stays at max", login, 1 << 40, 30 * time.Second},
		{"free 1: first failure waits base", backoff.Policy{Free: 1, Base: 500 * time.Millisecond, Factor: 3, Max: time.Minute, ForgetAfter: time.Hour}, 1, 500 * time.Millisecond},
		{"free 1: triples", backoff.Policy{Free: 1, Base: 500 * time.Millisecond, Factor: 3, Max: time.Minute, ForgetAfter: time.Hour}, 3, 4500 * time.Millisecond},
		{"factor 1 is constant", backoff.Policy{Free: 2, Base: 3 * time.Second, Factor: 1, Max: time.Minute, ForgetAfter: time.Hour}, 50, 3 * time.Second},
		{"factor 1: first non-free", backoff.Policy{Free: 2, Base: 3 * time.Second, Factor: 1, Max: time.Minute, ForgetAfter: time.Hour}, 2, 3 * time.Second},
		{"max equal to base", backoff.Policy{Free: 1, Base: time.Second, Factor: 2, Max: time.Second, ForgetAfter: time.Minute}, 9, time.Second},
		// 1000 × 1.5³ = 3375; × 1.5 = 5062.5, rounded down.
		{"fractional factor, exact", backoff.Policy{Free: 1, Base: time.Second, Factor: 1.5, Max: time.Hour, ForgetAfter: 2 * time.Hour}, 4, 3375 * time.Millisecond},
		{"fractional factor rounds down to the ms", backoff.Policy{Free: 1, Base: time.Second, Factor: 1.5, Max: time.Hour, ForgetAfter: 2 * time.Hour}, 5, 5062 * time.Millisecond},
		// 7 × 1.1 = 7.700000000000001, 7 × 1.1² = 8.470000000000002.
		{"small base, factor 1.1, rounds down", backoff.Policy{Free: 1, Base: 7 * time.Millisecond, Factor: 1.1, Max: time.Hour, ForgetAfter: 2 * time.Hour}, 2, 7 * time.Millisecond},
		{"small base, factor 1.1, rounds down again", backoff.Policy{Free: 1, Base: 7 * time.Millisecond, Factor: 1.1, Max: time.Hour, ForgetAfter: 2 * time.Hour}, 3, 8 * time.Millisecond},
		{"fractional factor capped at max", backoff.Policy{Free: 1, Base: time.Second, Factor: 1.5, Max: 4 * time.Second, ForgetAfter: time.Hour}, 6, 4 * time.Second},
		{"factor 16 capped at max", backoff.Policy{Base: time.Millisecond, Factor: 16, Max: 24 * time.Hour, ForgetAfter: 48 * time.Hour}, 100, 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Delay(tt.failures); got != tt.want {
				t.Errorf("%+v.Delay(%d) = %v, want %v", tt.p, tt.failures, got, tt.want)
			}
		})
	}
}

// randomPolicy returns a random policy that passes Validate.
func randomPolicy(r *rand.Rand) backoff.Policy {
	b := time.Duration(1+r.IntN(5000)) * time.Millisecond
	var f float64
	switch r.IntN(4) {
	case 0:
		f = 1
	case 1:
		f = float64(1 + r.IntN(16)) // whole factors up to 16
	default:
		f = 1.1 + r.Float64()*14.9
	}
	m := b + time.Duration(r.IntN(3_600_000))*time.Millisecond
	return backoff.Policy{
		Free:        1 + r.IntN(20),
		Base:        b,
		Factor:      f,
		Max:         m,
		ForgetAfter: m + time.Duration(1+r.IntN(3_600_000))*time.Millisecond,
	}
}

func TestPolicy_Delay_Properties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		p := randomPolicy(r)
		if err := p.Validate(); err != nil {
			t.Fatalf("randomPolicy made an invalid policy %+v: %v", p, err)
		}
		prev := time.Duration(0)
		for n := 0; n <= p.Free+60; n++ {
			d := p.Delay(n)
			switch {
			case d < 0:
				t.Fatalf("%+v.Delay(%d) = %v, want ≥ 0", p, n, d)
			case d > p.Max:
				t.Fatalf("%+v.Delay(%d) = %v, want ≤ max %v", p, n, d, p.Max)
			case d < prev:
				t.Fatalf("%+v.Delay(%d) = %v, less than Delay(%d) = %v", p, n, d, n-1, prev)
			case n < p.Free && d != 0:
				t.Fatalf("%+v.Delay(%d) = %v, want 0 for fewer than Free failures", p, n, d)
			case n == p.Free && d != p.Base:
				t.Fatalf("%+v.Delay(%d) = %v, want base %v after Free failures", p, n, d, p.Base)
			case d%time.Millisecond != 0:
				t.Fatalf("%+v.Delay(%d) = %v, want whole milliseconds", p, n, d)
			}
			prev = d
		}
		// Far along the ramp the delay is pinned at the cap (factor > 1) or at
		// base (factor 1).
		want := p.Max
		if p.Factor == 1 {
			want = p.Base
		}
		if p.Factor == 1 || p.Factor >= 1.5 {
			if got := p.Delay(p.Free + 100); got != want {
				t.Fatalf("%+v.Delay(free+100) = %v, want %v", p, got, want)
			}
		}
	}
}

// TestPolicy_Delay_FactorOneIsCheap stops a counter inflated by reports
// (Fail counts without any wait) from turning every Delay call into a loop as
// long as the counter.
func TestPolicy_Delay_FactorOneIsCheap(t *testing.T) {
	p := backoff.Policy{Base: time.Second, Factor: 1, Max: time.Minute, ForgetAfter: time.Hour}
	done := make(chan time.Duration, 1)
	go func() { done <- p.Delay(1 << 40) }()
	select {
	case got := <-done:
		if want := time.Second; got != want {
			t.Errorf("Delay(1<<40) = %v, want %v", got, want)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Delay(1<<40) with factor 1 did not return within 2s")
	}
}

func TestPolicy_Validate(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*backoff.Policy)
		wantErr string // "" for a valid policy
	}{
		{"default login is valid", func(*backoff.Policy) {}, ""},
		{"free 0", func(p *backoff.Policy) { p.Free = 0 }, "free"},
		{"factor just above 1", func(p *backoff.Policy) { p.Factor = 1.0001 }, "factor"},
		{"factor 1 is valid", func(p *backoff.Policy) { p.Factor = 1 }, ""},
		{"factor 16 is valid", func(p *backoff.Policy) { p.Factor = 16 }, ""},
		{"max equal to base is valid", func(p *backoff.Policy) { p.Max = p.Base }, ""},
		{"1ms base is valid", func(p *backoff.Policy) { p.Base = time.Millisecond }, ""},
		{"negative free", func(p *backoff.Policy) { p.Free = -1 }, "free"},
		{"zero base", func(p *backoff.Policy) { p.Base = 0 }, "base"},
		{"negative base", func(p *backoff.Policy) { p.Base = -time.Second }, "base"},
		{"base not whole ms", func(p *backoff.Policy) { p.Base = 1500 * time.Microsecond }, "base"},
		{"factor below 1", func(p *backoff.Policy) { p.Factor = 0.99 }, "factor"},
		{"factor zero", func(p *backoff.Policy) { p.Factor = 0 }, "factor"},
		{"factor above 16", func(p *backoff.Policy) { p.Factor = 16.01 }, "factor"},
		{"max below base", func(p *backoff.Policy) { p.Max = p.Base - time.Millisecond }, "max"},
		{"max not whole ms", func(p *backoff.Policy) { p.Max = 30*time.Second + time.Nanosecond }, "max"},
		{"forget_after equal to max", func(p *backoff.Policy) { p.ForgetAfter = p.Max }, "forget_after"},
		{"forget_after below max", func(p *backoff.Policy) { p.ForgetAfter = time.Second }, "forget_after"},
		{"zero policy", func(p *backoff.Policy) { *p = backoff.Policy{} }, "free"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := login
			tt.mod(&p)
			err := p.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("%+v.Validate() = %v, want nil", p, err)
			case tt.wantErr != "" && err == nil:
				t.Errorf("%+v.Validate() = nil, want an error about %s", p, tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("%+v.Validate() = %q, want an error about %s", p, err, tt.wantErr)
			case err != nil && !strings.HasPrefix(err.Error(), "backoff: "):
				t.Errorf("%+v.Validate() = %q, want the backoff: prefix", p, err)
			}
		})
	}
}

func TestPolicy_Validate_RejectsNaNFactor(t *testing.T) {
	p := login
	p.Factor = math.NaN()
	if err := p.Validate(); err == nil {
		t.Errorf("Validate() with factor NaN = nil, want an error; Delay(5), Delay(6), Delay(7) = %v, %v, %v", p.Delay(5), p.Delay(6), p.Delay(7))
	}
}

// op is one transition of a counter.
type op int

const (
	charge op = iota
	refund
	confirm
	fail
)

func (o op) String() string {
	return [...]string{"Charge", "Refund", "Confirm", "Fail"}[o]
}

// step is one row of a counter's step table: apply op at base+at, then expect
// the decision, the failure count and the wait from there.
type step struct {
	name         string
	at           time.Duration
	op           op
	fp           string
	want         backoff.Decision
	wantFailures int
	wantWait     time.Duration // p.Wait after the step
}

// apply runs one transition.
func apply(p backoff.Policy, s backoff.State, o op, now time.Time, fp string, w time.Duration) (backoff.State, backoff.Decision) {
	switch o {
	case charge:
		return p.Charge(s, now, fp, w)
	case refund:
		return p.Refund(s, now, w)
	case confirm:
		return p.Confirm(s, now, fp, w)
	default:
		return p.Fail(s, now, fp, w)
	}
}

// runSteps runs a step table against one counter, starting from s, and
// returns the final state.
func runSteps(t *testing.T, p backoff.Policy, s backoff.State, steps []step) backoff.State {
	t.Helper()
	for _, st := range steps {
		now := at(st.at)
		var d backoff.Decision
		s, d = apply(p, s, st.op, now, st.fp, window)
		if d != st.want {
			t.Errorf("%s: %v(%q) = %+v, want %+v", st.name, st.op, st.fp, d, st.want)
		}
		if got := s.Failures; got != st.wantFailures {
			t.Errorf("%s: Failures = %d, want %d", st.name, got, st.wantFailures)
		}
		if got := p.Wait(s, now); got != st.wantWait {
			t.Errorf("%s: Wait = %v, want %v", st.name, got, st.wantWait)
		}
		if t.Failed() {
			t.FailNow() // later steps make no sense after a wrong one
		}
	}
	return s
}

var (
	charged = backoff.Decision{Charged: true}
	ahead   = backoff.Decision{} // went ahead without a charge
)

func refused(w time.Duration) backoff.Decision { return backoff.Decision{Wait: w} }

func TestCounter_FiveFreeChargesThenRefused(t *testing.T) {
	runSteps(t, login, backoff.State{}, []step{
		{"t=+0s: charge 1", 0, charge, "", charged, 1, 0},
		{"t=+0s: charge 2", 0, charge, "", charged, 2, 0},
		{"t=+0s: charge 3", 0, charge, "", charged, 3, 0},
		{"t=+0s: charge 4", 0, charge, "", charged, 4, 0},
		{"t=+0s: charge 5, the last free one", 0, charge, "", charged, 5, time.Second},
		{"t=+0s: charge 6 refused for base", 0, charge, "", refused(time.Second), 5, time.Second},
		{"t=+1s: delay over, charge 6", time.Second, charge, "", charged, 6, 2 * time.Second},
	})
}

func TestCounter_RampAndCap(t *testing.T) {
	s := backoff.State{Failures: 5, Last: ms(0), Prev: ms(0)}
	runSteps(t, login, s, []step{
		{"t=+0s: after 5 failures, refused for base", 0, charge, "", refused(time.Second), 5, time.Second},
		{"t=+999ms: refused for the last ms", 999 * time.Millisecond, charge, "", refused(time.Millisecond), 5, time.Millisecond},
		{"t=+1s: charge 6", time.Second, charge, "", charged, 6, 2 * time.Second},
		{"t=+3s: charge 7", 3 * time.Second, charge, "", charged, 7, 4 * time.Second},
		{"t=+4s: refused", 4 * time.Second, charge, "", refused(3 * time.Second), 7, 3 * time.Second},
		{"t=+7s: charge 8", 7 * time.Second, charge, "", charged, 8, 8 * time.Second},
		{"t=+15s: charge 9", 15 * time.Second, charge, "", charged, 9, 16 * time.Second},
		{"t=+31s: charge 10, capped", 31 * time.Second, charge, "", charged, 10, 30 * time.Second},
		{"t=+61s: charge 11, still capped", 61 * time.Second, charge, "", charged, 11, 30 * time.Second},
		{"t=+90s: refused for 1s", 90 * time.Second, charge, "", refused(time.Second), 11, time.Second},
	})
}

// TestPolicy_FreeZeroStartsAtBase: Base is the delay after the first failure
// beyond Free, so with Free 0 one failure means a wait of Base.
func TestPolicy_FreeZeroStartsAtBase(t *testing.T) {
	p := backoff.Policy{Free: 0, Base: time.Second, Factor: 2, Max: time.Minute, ForgetAfter: time.Hour}
	if p.Validate() == nil {
		s, _ := p.Charge(backoff.State{}, at(0), "", window)
		if got, want := p.Wait(s, at(0)), p.Base; got != want {
			t.Errorf("Free 0: wait after one failure = %v, want base %v (or Validate rejecting Free 0)", got, want)
		}
	}
}

// TestCounter_HammeringDuringDelayDoesNotExtendIt: refused charges leave the
// counter exactly as it was, so a client retrying in a loop gets in as soon as
// the first delay is over.
func TestCounter_HammeringDuringDelayDoesNotExtendIt(t *testing.T) {
	s0 := backoff.State{Failures: 6, Last: ms(0), Prev: ms(-time.Second), Seen: []backoff.Seen{{"fp-old", ms(0)}}}
	s := s0
	for d := time.Duration(0); d < 2*time.Second; d += 50 * time.Millisecond {
		var dec backoff.Decision
		s, dec = login.Charge(s, at(d), "", window)
		if want := refused(2*time.Second - d); dec != want {
			t.Fatalf("Charge at +%v = %+v, want %+v", d, dec, want)
		}
		if !reflect.DeepEqual(s, s0) {
			t.Fatalf("refused Charge at +%v changed the state to %+v, want %+v", d, s, s0)
		}
	}
	// A fingerprint already paid for does not get through a delay either.
	s, dec := login.Charge(s, at(time.Second), "fp-old", window)
	if want := refused(time.Second); dec != want {
		t.Fatalf("Charge(fp-old) during the delay = %+v, want %+v", dec, want)
	}
	if !reflect.DeepEqual(s, s0) {
		t.Fatalf("refused Charge(fp-old) changed the state to %+v, want %+v", s, s0)
	}
	runSteps(t, login, s, []step{
		{"t=+2s: delay over, goes ahead", 2 * time.Second, charge, "", charged, 7, 4 * time.Second},
	})
}

func TestCounter_RefundRestoresState(t *testing.T) {
	tests := []struct {
		name string
		s    backoff.State
		at   time.Duration
	}{
		{"empty counter", backoff.State{}, 0},
		{"one failure", backoff.State{Failures: 1, Last: ms(-time.Minute)}, 0},
		{"with fingerprints", backoff.State{Failures: 1, Last: ms(-time.Minute), Seen: []backoff.Seen{{"a", ms(-time.Minute)}}}, 0},
		{"beyond free, delay over", backoff.State{Failures: 6, Last: ms(-time.Minute), Prev: ms(-time.Minute)}, 0},
		{"after a forgotten counter", backoff.State{Failures: 9, Last: ms(-2 * time.Hour), Prev: ms(-3 * time.Hour)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := at(tt.at)
			want := login.Current(tt.s, now, window)
			charged, d := login.Charge(tt.s, now, "", window)
			if !d.Charged {
				t.Fatalf("Charge(%+v) = %+v, want a charge", tt.s, d)
			}
			got, d := login.Refund(charged, now.Add(time.Second), window)
			// Prev is compared in TestCounter_RefundRestoresPrev.
			got.Prev, want.Prev = 0, 0
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Refund(Charge(%+v)) = %+v, want %+v", tt.s, got, want)
			}
			if w := login.Wait(want, now.Add(time.Second)); d.Wait != w || d.Charged {
				t.Errorf("Refund decision = %+v, want {Wait: %v}", d, w)
			}
		})
	}
}

// TestCounter_RefundIsNeverMoreLenient: one refund restores the state before
// the charge exactly; refunds of several charges restore the count, and the
// wait they leave is never shorter than the one before the charges.
func TestCounter_RefundIsNeverMoreLenient(t *testing.T) {
	s := backoff.State{Failures: 2, Last: ms(-time.Minute), Prev: ms(-2 * time.Minute)}
	c, _ := login.Charge(s, at(0), "", window)
	got, _ := login.Refund(c, at(time.Second), window)
	if got.Failures != s.Failures || got.Last != s.Last {
		t.Errorf("Refund(Charge(%+v)) = %+v, want Failures and Last restored", s, got)
	}
	// Two parallel attempts charged, neither happened.
	before := backoff.State{Failures: 5, Last: ms(-time.Minute)}
	c, _ = login.Charge(before, at(0), "", window)
	c, _ = login.Charge(c, at(2*time.Second), "", window)
	c, _ = login.Refund(c, at(2*time.Second), window)
	c, _ = login.Refund(c, at(2*time.Second), window)
	if c.Failures != before.Failures {
		t.Errorf("two charges then two refunds: %d failures, want %d", c.Failures, before.Failures)
	}
	for d := 2 * time.Second; d < 3*time.Minute; d += time.Second {
		if got, was := login.Wait(c, at(d)), login.Wait(before, at(d)); got < was {
			t.Fatalf("at +%v the wait is %v after the refunds, shorter than %v before the charges", d, got, was)
		}
	}
}

func TestCounter_RefundSteps(t *testing.T) {
	runSteps(t, login, backoff.State{}, []step{
		{"t=+0s: refund on an empty counter does nothing", 0, refund, "", ahead, 0, 0},
		{"t=+0s: charge", 0, charge, "", charged, 1, 0},
		{"t=+1s: success refunds it", time.Second, refund, "", ahead, 0, 0},
		{"t=+1s: refund again stays at zero", time.Second, refund, "", ahead, 0, 0},
	})
	s := backoff.State{Failures: 5, Last: ms(0), Prev: ms(-time.Minute)}
	runSteps(t, login, s, []step{
		{"t=+0.5s: refused", 500 * time.Millisecond, charge, "", refused(500 * time.Millisecond), 5, 500 * time.Millisecond},
		{"t=+1s: charge 6", time.Second, charge, "", charged, 6, 2 * time.Second},
		{"t=+1.5s: refund: back to 5 failures from t=0", 1500 * time.Millisecond, refund, "", ahead, 5, 0},
		{"t=+1.5s: charge again, no wait", 1500 * time.Millisecond, charge, "", charged, 6, 2 * time.Second},
	})
}

func TestCounter_ForgetAfterQuietPeriod(t *testing.T) {
	s := backoff.State{Failures: 11, Last: ms(0), Prev: ms(-30 * time.Second)}
	runSteps(t, login, s, []step{
		{"t=+59m59.999s: still remembered", time.Hour - time.Millisecond, charge, "", charged, 12, 30 * time.Second},
		{"t=+1h59m59.998s: 1ms short of an hour's quiet", 2*time.Hour - 2*time.Millisecond, fail, "", backoff.Decision{Charged: true, Wait: 30 * time.Second}, 13, 30 * time.Second},
		{"t=+2h59m59.998s: an hour of quiet forgets all", 3*time.Hour - 2*time.Millisecond, charge, "", charged, 1, 0},
	})
	if got := login.Current(s, at(time.Hour), window); !reflect.DeepEqual(got, backoff.State{}) {
		t.Errorf("Current after forget_after = %+v, want the zero State", got)
	}
	if got := login.Current(s, at(time.Hour-time.Millisecond), window); !reflect.DeepEqual(got, s) {
		t.Errorf("Current 1ms before forget_after = %+v, want %+v unchanged", got, s)
	}
}

// TestCounter_SameWrongPasswordOnce: a phone retrying an old password does not
// slow its owner down.
func TestCounter_SameWrongPasswordOnce(t *testing.T) {
	s := runSteps(t, login, backoff.State{}, []step{
		{"t=+0s: charge for pw-a", 0, charge, "pw-a", charged, 1, 0},
		{"t=+0s: confirm pw-a failed", 0, confirm, "pw-a", ahead, 1, 0},
		{"t=+1m: pw-a again goes ahead uncharged", time.Minute, charge, "pw-a", ahead, 1, 0},
		{"t=+1m: a report of pw-a without a token counts nothing", time.Minute, fail, "pw-a", ahead, 1, 0},
		{"t=+2m: pw-b is new: charged", 2 * time.Minute, charge, "pw-b", charged, 2, 0},
		{"t=+2m: confirm pw-b", 2 * time.Minute, confirm, "pw-b", ahead, 2, 0},
		{"t=+3m: pw-c reported without a token counts", 3 * time.Minute, fail, "pw-c", charged, 3, 0},
		{"t=+4m: pw-c was remembered by Fail", 4 * time.Minute, charge, "pw-c", ahead, 3, 0},
		{"t=+4m: no fingerprint always counts", 4 * time.Minute, fail, "", charged, 4, 0},
		{"t=+4m: nor is the empty fingerprint remembered", 4 * time.Minute, charge, "", charged, 5, time.Second},
		{"t=+4m: pw-a is refused during the delay", 4 * time.Minute, charge, "pw-a", refused(time.Second), 5, time.Second},
		{"t=+9m59.999s: pw-a still within the window", window - time.Millisecond, charge, "pw-a", ahead, 5, 0},
		{"t=+10m: pw-a is forgotten: charged", window, charge, "pw-a", charged, 6, 2 * time.Second},
	})
	if got, want := len(s.Seen), 2; got != want {
		t.Fatalf("after the window, Seen = %+v, want %d fingerprints (pw-b, pw-c)", s.Seen, want)
	}
	for i, fp := range []string{"pw-b", "pw-c"} {
		if s.Seen[i].Fingerprint != fp {
			t.Errorf("Seen[%d] = %+v, want %s", i, s.Seen[i], fp)
		}
	}
}

func TestCounter_SeenIsBounded(t *testing.T) {
	var s backoff.State
	for i := 0; i < backoff.MaxSeen+3; i++ {
		s, _ = login.Fail(s, at(time.Duration(i)*time.Second), string(rune('a'+i)), window)
	}
	if got, want := len(s.Seen), backoff.MaxSeen; got != want {
		t.Fatalf("after %d distinct fingerprints, len(Seen) = %d, want %d", backoff.MaxSeen+3, got, want)
	}
	// The three oldest went first; the rest stay oldest first.
	for i, f := range s.Seen {
		if want := string(rune('a' + 3 + i)); f.Fingerprint != want {
			t.Errorf("Seen[%d] = %q, want %q", i, f.Fingerprint, want)
		}
	}
	now := at(time.Duration(backoff.MaxSeen+3) * time.Second)
	tests := []struct {
		name        string
		fp          string
		wantCharged bool
	}{
		{"oldest evicted fingerprint counts again", "a", true},
		{"third evicted fingerprint counts again", "c", true},
		{"oldest kept fingerprint is still known", "d", false},
		{"newest fingerprint is still known", string(rune('a' + backoff.MaxSeen + 2)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d := login.Fail(s, now, tt.fp, window)
			if d.Charged != tt.wantCharged {
				t.Errorf("Fail(%q) charged = %v, want %v", tt.fp, d.Charged, tt.wantCharged)
			}
		})
	}
}

func TestCounter_ConfirmRefreshesFingerprint(t *testing.T) {
	s := runSteps(t, login, backoff.State{}, []step{
		{"t=+0s: a", 0, fail, "a", charged, 1, 0},
		{"t=+1s: b", time.Second, fail, "b", charged, 2, 0},
		{"t=+5m: confirm a again moves it to the end", 5 * time.Minute, confirm, "a", ahead, 2, 0},
		{"t=+12m: b has aged out, a has not", 12 * time.Minute, charge, "a", ahead, 2, 0},
		{"t=+12m: b counts again", 12 * time.Minute, charge, "b", charged, 3, 0},
	})
	if want := []backoff.Seen{{"a", ms(5 * time.Minute)}}; !reflect.DeepEqual(s.Seen, want) {
		t.Errorf("Seen = %+v, want %+v", s.Seen, want)
	}
}

func TestCounter_ConfirmIsIdempotent(t *testing.T) {
	s0 := backoff.State{Failures: 5, Last: ms(0), Prev: ms(-time.Second)}
	tests := []struct {
		name string
		fp   string
	}{
		{"with a fingerprint", "pw"},
		{"without a fingerprint", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := at(100 * time.Millisecond)
			once, d1 := login.Confirm(s0, now, tt.fp, window)
			twice, d2 := login.Confirm(once, now, tt.fp, window)
			if !reflect.DeepEqual(once, twice) {
				t.Errorf("Confirm twice = %+v, want %+v as after once", twice, once)
			}
			if d1 != d2 || d1 != refused(900*time.Millisecond) {
				t.Errorf("Confirm decisions = %+v then %+v, want {Wait: 900ms} both times", d1, d2)
			}
			if once.Failures != s0.Failures || once.Last != s0.Last {
				t.Errorf("Confirm changed the count: %+v, want Failures %d Last %d", once, s0.Failures, s0.Last)
			}
			later, _ := login.Confirm(once, at(time.Minute), tt.fp, window)
			if later.Failures != s0.Failures || later.Last != s0.Last || len(later.Seen) != len(once.Seen) {
				t.Errorf("Confirm a minute later = %+v, want the count and fingerprints of %+v", later, once)
			}
		})
	}
}

func TestPolicy_TTL(t *testing.T) {
	tests := []struct {
		name string
		s    backoff.State
		at   time.Duration
		want time.Duration
	}{
		{"empty state", backoff.State{}, 0, 0},
		{"one failure now", backoff.State{Failures: 1, Last: ms(0)}, 0, time.Hour},
		{"one failure 20m ago", backoff.State{Failures: 1, Last: ms(-20 * time.Minute)}, 0, 40 * time.Minute},
		{"quiet period over", backoff.State{Failures: 3, Last: ms(-time.Hour)}, 0, 0},
		{"long past", backoff.State{Failures: 3, Last: ms(-48 * time.Hour)}, 0, 0},
		{"only a fingerprint", backoff.State{Seen: []backoff.Seen{{"a", ms(-time.Minute)}}}, 0, 9 * time.Minute},
		{"fingerprint outlives failures", backoff.State{Failures: 1, Last: ms(-time.Hour + time.Second), Seen: []backoff.Seen{{"a", ms(-time.Minute)}}}, 0, 9 * time.Minute},
		{"failures outlive fingerprint", backoff.State{Failures: 1, Last: ms(-time.Minute), Seen: []backoff.Seen{{"a", ms(-time.Minute)}}}, 0, 59 * time.Minute},
		{"newest of several fingerprints", backoff.State{Seen: []backoff.Seen{{"a", ms(-5 * time.Minute)}, {"b", ms(-time.Minute)}}}, 0, 9 * time.Minute},
		{"fingerprints all aged out", backoff.State{Seen: []backoff.Seen{{"a", ms(-window)}}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := login.TTL(tt.s, at(tt.at), window); got != tt.want {
				t.Errorf("TTL(%+v) = %v, want %v", tt.s, got, tt.want)
			}
		})
	}
}

// TestPolicy_TTLCoversEveryChange: once TTL has passed, dropping the state
// changes no decision — Current of the old state is the zero State.
func TestPolicy_TTLCoversEveryChange(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300; i++ {
		p := randomPolicy(r)
		w := time.Duration(1+r.IntN(7_200_000)) * time.Millisecond
		s, now := randomHistory(r, p, w, 30)
		ttl := p.TTL(s, now, w)
		if ttl < 0 {
			t.Fatalf("TTL = %v, want ≥ 0", ttl)
		}
		if got := p.Current(s, now.Add(ttl), w); got.Failures != 0 || len(got.Seen) != 0 {
			t.Fatalf("%+v: Current(%+v) at now+TTL(%v) = %+v, want nothing left", p, s, ttl, got)
		}
		if ttl > 0 {
			if got := p.Current(s, now.Add(ttl-time.Millisecond), w); got.Failures == 0 && len(got.Seen) == 0 {
				t.Fatalf("%+v: Current(%+v) 1ms before TTL(%v) is empty, so TTL is too long", p, s, ttl)
			}
		}
	}
}

// randomHistory applies n random transitions at non-decreasing times and
// returns the state and the time of the last one.
func randomHistory(r *rand.Rand, p backoff.Policy, w time.Duration, n int) (backoff.State, time.Time) {
	var s backoff.State
	now := base
	for range n {
		now = now.Add(time.Duration(r.IntN(int(p.Max/time.Millisecond)*2+1)) * time.Millisecond)
		fp := ""
		if r.IntN(3) > 0 {
			fp = string(rune('a' + r.IntN(12)))
		}
		s, _ = apply(p, s, op(r.IntN(4)), now, fp, w)
	}
	return s, now
}

func TestCounter_InvariantsOverRandomHistories(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 300; i++ {
		p := randomPolicy(r)
		w := time.Duration(1+r.IntN(7_200_000)) * time.Millisecond
		checkInvariants(t, p, w, r.Uint64())
	}
}

// checkInvariants runs a seeded random sequence of transitions and checks
// what must hold after every one.
func checkInvariants(t *testing.T, p backoff.Policy, w time.Duration, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed))
	var s backoff.State
	now := base
	for i := 0; i < 60; i++ {
		now = now.Add(time.Duration(r.IntN(int(p.Max/time.Millisecond)+1)) * time.Millisecond)
		o := op(r.IntN(4))
		fp := ""
		if r.IntN(3) > 0 {
			fp = string(rune('a' + r.IntN(12)))
		}
		before := s
		var d backoff.Decision
		s, d = apply(p, s, o, now, fp, w)
		if err := stateInvariants(p, s, d, now, w); err != "" {
			t.Fatalf("%+v window %v: %v(%+v, %q) at step %d = %+v, %+v: %s", p, w, o, before, fp, i, s, d, err)
		}
		if o == charge && d.Charged && s.Failures != p.Current(before, now, w).Failures+1 {
			t.Fatalf("%+v: Charge from %+v counted %d failures, want one more", p, before, s.Failures)
		}
		if o == charge && !d.Charged && !reflect.DeepEqual(s, p.Current(before, now, w)) {
			t.Fatalf("%+v: uncharged Charge from %+v changed the state to %+v", p, before, s)
		}
	}
}

func stateInvariants(p backoff.Policy, s backoff.State, d backoff.Decision, now time.Time, w time.Duration) string {
	switch {
	case s.Failures < 0:
		return "negative failures"
	case d.Wait < 0 || d.Wait > p.Max:
		return "decision wait outside [0, max]"
	case p.Wait(s, now) < 0 || p.Wait(s, now) > p.Max:
		return "wait outside [0, max]"
	case p.TTL(s, now, w) < 0:
		return "negative TTL"
	case s.Failures > 0 && p.TTL(s, now, w) < p.Wait(s, now):
		return "TTL shorter than the wait"
	case len(s.Seen) > backoff.MaxSeen:
		return "too many fingerprints"
	case s.Failures == 0 && (s.Last != 0 || s.Prev != 0):
		return "times kept without failures"
	}
	fps := map[string]bool{}
	for i, f := range s.Seen {
		if f.Fingerprint == "" {
			return "empty fingerprint remembered"
		}
		if fps[f.Fingerprint] {
			return "fingerprint remembered twice"
		}
		fps[f.Fingerprint] = true
		if i > 0 && f.At < s.Seen[i-1].At {
			return "fingerprints not oldest first"
		}
		if f.At != now.UnixMilli() && now.UnixMilli()-f.At >= w.Milliseconds() {
			return "fingerprint older than the window kept"
		}
	}
	return ""
}

func FuzzTransitions(f *testing.F) {
	f.Add(5, int64(1000), 2.0, int64(30_000), int64(3_600_000), int64(600_000), []byte{0, 0, 0, 0, 0, 0, 0, 1, 2, 3})
	f.Add(0, int64(1), 1.0, int64(1), int64(2), int64(0), []byte{3, 3, 3, 1, 1, 0})
	f.Add(3, int64(7), 1.1, int64(100), int64(101), int64(50), []byte{0x40, 0x81, 0xc2, 0x13, 0xff})
	f.Fuzz(func(t *testing.T, free int, baseMS int64, factor float64, maxMS, forgetMS, windowMS int64, ops []byte) {
		p := backoff.Policy{
			Free:        free,
			Base:        time.Duration(baseMS) * time.Millisecond,
			Factor:      factor,
			Max:         time.Duration(maxMS) * time.Millisecond,
			ForgetAfter: time.Duration(forgetMS) * time.Millisecond,
		}
		// Valid policies (NaN passes Validate: see
		// TestPolicy_Validate_RejectsNaNFactor), windows up to a year.
		if p.Validate() != nil || math.IsNaN(factor) || maxMS > 1<<40 || forgetMS > 1<<40 || windowMS < 0 || windowMS > 1<<35 || len(ops) > 200 {
			t.Skip()
		}
		w := time.Duration(windowMS) * time.Millisecond
		var s backoff.State
		now := base
		for i, b := range ops {
			// Low two bits: the op; next three: the fingerprint (0 = none);
			// high three: how far time moves.
			o := op(b & 3)
			fp := ""
			if k := (b >> 2) & 7; k > 0 {
				fp = string(rune('a' + k))
			}
			now = now.Add(time.Duration(b>>5) * p.Max / 3)
			before := s
			var d backoff.Decision
			s, d = apply(p, s, o, now, fp, w)
			if err := stateInvariants(p, s, d, now, w); err != "" {
				t.Fatalf("%+v window %v: %v(%+v, %q) at step %d = %+v, %+v: %s", p, w, o, before, fp, i, s, d, err)
			}
		}
	})
}

// TestRefund_TheOwnersSuccessCannotRewindAnAttackersLaterFailure: the owner's
// attempt is charged at +0s, an attacker's failure is counted at +1s, and
// the owner's success refunds her charge at +1.5s. Five failures remain, the
// last the attacker's at +1s, so the next attempt waits until +2s: the
// refund must not move Last back to the owner's charge at +0s.
func TestRefund_TheOwnersSuccessCannotRewindAnAttackersLaterFailure(t *testing.T) {
	settle := func(s backoff.State, now time.Time) backoff.State {
		s, _ = login.Settle(s, now, "owner", window)
		return s
	}
	tests := []struct {
		name   string
		attack func(s backoff.State, now time.Time) backoff.State // at +1s
		refund func(s backoff.State, now time.Time) backoff.State // the owner's, at +1.5s
		last   time.Duration                                      // Last after the refund
		wait   time.Duration                                      // at +1.5s
	}{
		{
			name: "a guess charged with its attempt, Settle",
			attack: func(s backoff.State, now time.Time) backoff.State {
				s, _ = login.Charge(s, now, "fp-attacker", window)
				return s.Hold("attacker")
			},
			refund: settle,
			last:   time.Second, wait: 500 * time.Millisecond,
		},
		{
			name: "a guess charged with its attempt, Release then Refund",
			attack: func(s backoff.State, now time.Time) backoff.State {
				s, _ = login.Charge(s, now, "fp-attacker", window)
				return s.Hold("attacker")
			},
			refund: func(s backoff.State, now time.Time) backoff.State {
				s, ok := login.Current(s, now, window).Release("owner")
				if !ok {
					t.Fatal("the owner's attempt is not pending")
				}
				s, _ = login.Refund(s, now, window)
				return s
			},
			last: time.Second, wait: 500 * time.Millisecond,
		},
		{
			name: "a guess charged and confirmed",
			attack: func(s backoff.State, now time.Time) backoff.State {
				s, _ = login.Charge(s, now, "fp-attacker", window)
				s, _ = login.Current(s.Hold("attacker"), now, window).Release("attacker")
				s, _ = login.Confirm(s, now, "fp-attacker", window)
				return s
			},
			refund: settle,
			last:   time.Second, wait: 500 * time.Millisecond,
		},
		{
			name: "a failure reported without an attempt (Fail)",
			attack: func(s backoff.State, now time.Time) backoff.State {
				s, _ = login.Fail(s, now, "fp-attacker", window)
				return s
			},
			refund: settle,
			last:   time.Second, wait: 500 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := backoff.State{Failures: 4, Last: ms(-time.Minute), Prev: ms(-2 * time.Minute)}
			s, d := login.Charge(s, at(0), "", window)
			if !d.Charged {
				t.Fatalf("the owner's charge: %+v, want charged", d)
			}
			s = s.Hold("owner")
			s = tt.attack(s, at(time.Second))
			if s.Failures != 6 {
				t.Fatalf("after the attack: %d failures, want 6", s.Failures)
			}
			now := at(1500 * time.Millisecond)
			s = tt.refund(s, now)
			if got, want := s.Failures, 5; got != want {
				t.Errorf("after the owner's success: Failures = %d, want %d", got, want)
			}
			if got, want := s.Last, ms(tt.last); got != want {
				t.Errorf("after the owner's success: Last = %+v, want %+v (the attacker's failure)", time.Duration(got-ms(0))*time.Millisecond, tt.last)
			}
			if got := login.Wait(s, now); got != tt.wait {
				t.Errorf("after the owner's success: Wait = %v, want %v", got, tt.wait)
			}
		})
	}
}

// TestRefund_TheNewestChargeStillRewinds: refunding the newest charge puts
// Last back to the failure before it, whoever made the older charges.
func TestRefund_TheNewestChargeStillRewinds(t *testing.T) {
	s := backoff.State{Failures: 4, Last: ms(-time.Minute), Prev: ms(-2 * time.Minute)}
	s, _ = login.Charge(s, at(0), "", window) // the attacker's guess
	s = s.Hold("attacker")
	s, _ = login.Charge(s, at(time.Second), "", window) // the owner's attempt
	s = s.Hold("owner")
	s, d := login.Settle(s, at(1500*time.Millisecond), "owner", window)
	if s.Failures != 5 || s.Last != ms(0) {
		t.Errorf("after the owner's success: %+v, want 5 failures, the last at +0s", s)
	}
	if got, want := d.Wait, time.Duration(0); got != want { // 5 failures from +0s: due at +1s
		t.Errorf("Settle's Wait = %v, want %v", got, want)
	}
}

// TestRefund_NeverMovesLastBeforeACountedFailure: over random histories of
// held charges, successes, confirmed failures and failures without an
// attempt, as the engine makes them, Last is never earlier than a failure
// that is still counted, so no refund shortens a wait.
func TestRefund_NeverMovesLastBeforeACountedFailure(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for seq := range 300 {
		var s backoff.State
		pending := map[string]int64{} // charged and not settled, by attempt
		var kept []int64              // failures that stay counted
		now := base
		for i := range 80 {
			now = now.Add(time.Duration(r.IntN(3000)) * time.Millisecond)
			id := fmt.Sprint("a", r.IntN(i+1)) // often one charged before
			op := "charge"
			switch r.IntN(5) {
			case 1:
				op = "settle"
			case 2:
				op = "refund"
			case 3:
				op = "confirm"
			case 4:
				op = "fail"
			}
			_, held := pending[id]
			switch op {
			case "charge":
				id = fmt.Sprint("a", i)
				var d backoff.Decision
				if s, d = login.Charge(s, now, "", window); d.Charged {
					s = s.Hold(id)
					pending[id] = now.UnixMilli()
				}
			case "settle":
				s, _ = login.Settle(s, now, id, window)
			case "refund": // the store's BackoffRefund
				var ok bool
				if s, ok = login.Current(s, now, window).Release(id); ok {
					s, _ = login.Refund(s, now, window)
				}
			case "confirm": // the store's BackoffConfirm
				s, _ = login.Current(s, now, window).Release(id)
				s, _ = login.Confirm(s, now, "", window)
			case "fail":
				s, _ = login.Fail(s, now, "", window)
				kept = append(kept, now.UnixMilli())
			}
			if held && (op == "settle" || op == "refund") {
				delete(pending, id)
			}
			if held && op == "confirm" {
				kept = append(kept, pending[id])
				delete(pending, id)
			}
			for a, at := range pending { // pushed out past MaxPending: counted for good
				if !slices.Contains(s.Pending, a) {
					kept = append(kept, at)
					delete(pending, a)
				}
			}
			newest := slices.Max(append(slices.Collect(maps.Values(pending)), append(kept, 0)...))
			if got, want := s.Failures, len(pending)+len(kept); got != want {
				t.Fatalf("seq %d step %d (%s %s): %d failures, want %d", seq, i, op, id, got, want)
			}
			if s.Last < newest {
				t.Fatalf("seq %d step %d (%s %s): Last %d is before a counted failure at %d: %+v", seq, i, op, id, s.Last-ms(0), newest-ms(0), s)
			}
		}
	}
}
