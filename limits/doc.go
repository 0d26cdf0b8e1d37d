// Package limits holds the rate-limiting algorithms tollgate offers, each one
// a pure function of (state, now, cost) → (state, Decision): TakeN never reads
// a clock, and TTL says how long a state must be kept. The Redis store's Lua
// scripts reproduce every step exactly, so times are whole Unix milliseconds,
// every quantity is an integer, and Validate bounds the parameters so that
// every product stays exact in Lua's float64 numbers.
//
// Each algorithm's zero state holds nothing: a subject never seen. Times are
// assumed to lie between 1970 and 2^51 ms after it (about the year 73,000).
// A state written at a later time than now (a store clock that stepped back)
// stays in force as it was then: a clock stepping back never frees what was
// counted.
//
// GiveBackN gives back units an earlier TakeN took (a call that was counted
// but did not go ahead), as far as the state still holds them, never below
// the zero state; it never refuses. At the instant of the take, with nothing
// taken since, every algorithm returns a state that acts at now and after
// exactly as the one before the take. Later, each algorithm's doc says where
// it is only an approximation. Either way it undoes the count, not what the
// count caused: a call refused meanwhile stays refused.
//
// # Choosing an algorithm
//
// Bucket (a token bucket) is for request rates that may come in bursts: Burst
// calls at once after a quiet period, then one per Interval; one integer per
// subject. LeakyBucket is for shaping: the same admission, but admitted calls
// are told to wait their turn, so they go ahead at most one per Interval;
// one integer per subject. FixedWindow is the simplest count ("5 codes per
// hour", resetting on the hour); two integers per subject, but a sender can
// get 2×Limit through in a moment across a window boundary. SlidingLog is
// exact, never more than Limit in any span of one Window, and suits small
// limits on costly actions (OTP sends); it keeps one timestamp per admitted
// unit, hence at most MaxLogLimit. SlidingCounter is the constant-memory
// compromise: three integers per subject, no burst at the boundary, but an
// estimate that a sender who bunches calls can push to 2×Limit−1 within one
// Window.
package limits
