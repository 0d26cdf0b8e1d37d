//go:build race

package main

// raceEnabled is true when the tests run under the race detector; the
// end-to-end test then builds the binary with -race too, which reuses the
// test build's compiled packages.
const raceEnabled = true
