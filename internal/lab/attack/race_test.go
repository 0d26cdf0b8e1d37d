//go:build race

package attack

// raceEnabled is true when the tests run under the race detector, which
// slows the engine down about tenfold: the searches then run shorter.
const raceEnabled = true
