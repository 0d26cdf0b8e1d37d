package authguard

import (
	"fmt"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/limits"
)

// ParamKind says which parameters a rule's algorithm takes.
type ParamKind uint8

const (
	// ParamWindow: Rate.Window and Rate.Limit (a limit per window).
	ParamWindow ParamKind = iota + 1
	// ParamRate: Rate.Interval and Rate.Limit (a burst or a queue, and a
	// rate: one unit per Interval).
	ParamRate
	// ParamConversion: Rate.Window, Rate.Limit (the volume it takes to
	// judge) and Rate.MinPercent.
	ParamConversion
	// ParamBackoff: Backoff, and DeviceFree and DeviceSlots on the device
	// subject.
	ParamBackoff
	// ParamWindows: Of and Windows.
	ParamWindows
)

// algorithm is one row of the algorithm table: everything the engine, the
// rule validation and the tools know about an algorithm. Adding one is a
// type in package limits, a row here, its Lua twin in the Redis store's
// rate.lua and its conformance row in internal/testkit/storetest (docs/design.md
// §2; TestAlgorithms_EveryRowHasALuaTwinAndAConformanceRow).
type algorithm struct {
	// name is the algorithm's name in configuration and on the wire (the
	// Redis store sends it to rate.lua).
	name string
	// param is what it takes.
	param ParamKind
	// rate, for the algorithms of package limits, runs them on a
	// RateLimit; nil for Backoff and Distinct.
	rate *rateFuncs
	// queues: an admitted call is told to wait its place in the queue
	// (Result.Wait when not Over), and the verdict proceeds with that delay.
	queues bool
	// failureLog: counting failures (OnFailure), the rule is a log of
	// attempts, kept as a LogOp that takes Windows.
	failureLog bool
	// describe says a rule's parameters in words, with dur writing a
	// duration.
	describe func(r *Rule, dur func(time.Duration) string) string
}

// rateFuncs is a limits.Algorithm on a RateLimit's parameters, its state
// held as an any: limits.FixedState, []int64 (a SlidingLog), limits.CounterState,
// int64 (a bucket's TAT or drain time) or limits.ConversionState.
type rateFuncs struct {
	validate func(RateLimit) error
	// take and giveBack are TakeN and GiveBackN.
	take, giveBack func(r RateLimit, state any, now time.Time, cost int) (any, limits.Decision)
	// credit, when not nil, counts cost verifications (RateCredit).
	credit func(r RateLimit, state any, now time.Time, cost int) (any, limits.Decision)
}

// rateOf runs, on a RateLimit, the limits.Algorithm that of makes of its
// parameters, with S that algorithm's state.
func rateOf[S any, A limits.Algorithm[S]](of func(RateLimit) A) *rateFuncs {
	return &rateFuncs{
		validate: func(r RateLimit) error { return of(r).Validate() },
		take: func(r RateLimit, state any, now time.Time, cost int) (any, limits.Decision) {
			s, _ := state.(S)
			return of(r).TakeN(s, now, cost)
		},
		giveBack: func(r RateLimit, state any, now time.Time, cost int) (any, limits.Decision) {
			s, _ := state.(S)
			return of(r).GiveBackN(s, now, cost)
		},
	}
}

// algorithms is the table, indexed by Algorithm, in the order of the
// constants; row 0 is no algorithm.
var algorithms = [...]algorithm{
	0: {describe: describeWindow},
	FixedWindow: {
		name: "fixed_window", param: ParamWindow, describe: describeWindow,
		rate: rateOf(func(r RateLimit) limits.FixedWindow { return limits.FixedWindow{Window: r.Window, Limit: r.Limit} }),
	},
	SlidingLog: {
		name: "sliding_log", param: ParamWindow, failureLog: true, describe: describeWindow,
		rate: rateOf(func(r RateLimit) limits.SlidingLog { return limits.SlidingLog{Window: r.Window, Limit: r.Limit} }),
	},
	SlidingCounter: {
		name: "sliding_counter", param: ParamWindow, describe: describeWindow,
		rate: rateOf(func(r RateLimit) limits.SlidingCounter {
			return limits.SlidingCounter{Window: r.Window, Limit: r.Limit}
		}),
	},
	TokenBucket: {
		name: "token_bucket", param: ParamRate,
		rate: rateOf(func(r RateLimit) limits.Bucket { return limits.Bucket{Interval: r.Interval, Burst: r.Limit} }),
		describe: func(r *Rule, dur func(time.Duration) string) string {
			return fmt.Sprintf("burst %d, then 1 per %v", r.Rate.Limit, dur(r.Rate.Interval))
		},
	},
	LeakyBucket: {
		name: "leaky_bucket", param: ParamRate, queues: true,
		rate: rateOf(func(r RateLimit) limits.LeakyBucket {
			return limits.LeakyBucket{Interval: r.Interval, Capacity: r.Limit}
		}),
		describe: func(r *Rule, dur func(time.Duration) string) string {
			return fmt.Sprintf("queue of %d, 1 leaves per %v", r.Rate.Limit, dur(r.Rate.Interval))
		},
	},
	Backoff: {
		name: "backoff", param: ParamBackoff,
		describe: func(r *Rule, dur func(time.Duration) string) string {
			b := r.Backoff
			s := fmt.Sprintf("%d free, then %v x%g up to %v; forgets after %v", b.Free, dur(b.Base), b.Factor, dur(b.Max), dur(b.ForgetAfter))
			if r.Subject.Parts == PartDevice {
				s = fmt.Sprintf("%d free per device for %d devices per %v; then shared: %s", r.DeviceFree, r.DeviceSlots, dur(DeviceWindow), s)
			}
			return s
		},
	},
	Distinct: {
		name: "distinct", param: ParamWindows,
		describe: func(r *Rule, dur func(time.Duration) string) string {
			of := "accounts"
			switch r.Of {
			case PartIP:
				of = "addresses"
			case PartDestination:
				of = "destinations"
			}
			return fmt.Sprintf("%s of distinct %s", describeWindows(r, dur), of)
		},
	},
	Conversion: {
		name: "conversion", param: ParamConversion,
		rate: conversionFuncs(),
		describe: func(r *Rule, dur func(time.Duration) string) string {
			return fmt.Sprintf("once %d sent per %v, held while under %d%% verified", r.Rate.Limit, dur(r.Rate.Window), r.Rate.MinPercent)
		},
	},
}

func conversion(r RateLimit) limits.Conversion {
	return limits.Conversion{Window: r.Window, MinVolume: r.Limit, MinPercent: r.MinPercent}
}

func conversionFuncs() *rateFuncs {
	f := rateOf(conversion)
	f.credit = func(r RateLimit, state any, now time.Time, cost int) (any, limits.Decision) {
		s, _ := state.(limits.ConversionState)
		return conversion(r).Credit(s, now, cost)
	}
	return f
}

// describeWindow describes a rule of a limit per window, or a failure log.
func describeWindow(r *Rule, dur func(time.Duration) string) string {
	if r.Counts == OnFailure { // a failure log
		return describeWindows(r, dur) + " failed attempts"
	}
	return fmt.Sprintf("%d per %v", r.Rate.Limit, dur(r.Rate.Window))
}

func describeWindows(r *Rule, dur func(time.Duration) string) string {
	var ws []string
	for _, w := range r.Windows {
		ws = append(ws, fmt.Sprintf("%d per %v", w.Limit, dur(w.Length)))
	}
	return strings.Join(ws, ", ")
}

// algorithmNames are the table's names, indexed by Algorithm.
var algorithmNames = func() []string {
	names := make([]string, len(algorithms))
	for i := range algorithms {
		names[i] = algorithms[i].name
	}
	return names
}()

// row is a's row of the table; an unknown algorithm's is row 0.
func (a Algorithm) row() *algorithm {
	if int(a) < len(algorithms) {
		return &algorithms[a]
	}
	return &algorithms[0]
}

// Algorithms lists every algorithm, in the order of the constants.
func Algorithms() []Algorithm {
	all := make([]Algorithm, 0, len(algorithms)-1)
	for i := 1; i < len(algorithms); i++ {
		all = append(all, Algorithm(i))
	}
	return all
}

// Param says which parameters a takes; 0 for an unknown algorithm.
func (a Algorithm) Param() ParamKind { return a.row().param }

// IsRate reports whether a is one of package limits' algorithms, counted
// by a RateOp (the Redis store's rate.lua) on a RateLimit.
func (a Algorithm) IsRate() bool { return a.row().rate != nil }

// Queues reports whether a call a admits waits its place in a queue (a
// proceed with a delay).
func (a Algorithm) Queues() bool { return a.row().queues }

// AlgorithmsTaking lists the names of the algorithms that take param, in
// table order, joined by ", ".
func AlgorithmsTaking(param ParamKind) string {
	var names []string
	for i := 1; i < len(algorithms); i++ {
		if algorithms[i].param == param {
			names = append(names, algorithms[i].name)
		}
	}
	return strings.Join(names, ", ")
}

// Describe says the rule's parameters in words, writing durations with
// dur (time.Duration.String when nil): "burst 20, then 1 per 50ms".
func (r *Rule) Describe(dur func(time.Duration) string) string {
	if dur == nil {
		dur = time.Duration.String
	}
	return r.Algorithm.row().describe(r, dur)
}
