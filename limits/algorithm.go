package limits

import "time"

// Algorithm is what every algorithm of this package is: a pure function of
// (state, now, cost) → (state, Decision), with S its state, whose zero value
// holds nothing. Validate bounds the parameters (TakeN, GiveBackN and TTL
// assume it); TakeN takes cost units or refuses, leaving the state as it was;
// GiveBackN gives back cost units an earlier TakeN took and never refuses;
// TTL is how long a state matters after now, which every Decision's Reset
// equals. None reads a clock.
//
// FixedWindow, SlidingLog, SlidingCounter, Bucket, LeakyBucket and
// Conversion implement it; a new algorithm is a type here that does too,
// with its Lua twin in the Redis store (see docs/design.md §2).
type Algorithm[S any] interface {
	Validate() error
	TakeN(s S, now time.Time, cost int) (S, Decision)
	GiveBackN(s S, now time.Time, cost int) (S, Decision)
	TTL(s S, now time.Time) time.Duration
}

// The algorithms and their states.
var (
	_ Algorithm[FixedState]      = FixedWindow{}
	_ Algorithm[[]int64]         = SlidingLog{}
	_ Algorithm[CounterState]    = SlidingCounter{}
	_ Algorithm[int64]           = Bucket{}
	_ Algorithm[int64]           = LeakyBucket{}
	_ Algorithm[ConversionState] = Conversion{}
)
