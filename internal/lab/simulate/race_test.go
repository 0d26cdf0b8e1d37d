//go:build race

package simulate

// raceEnabled is true when the tests run under the race detector, which
// slows the engine down about tenfold: the long runs then run shorter.
const raceEnabled = true
