// Package lessgc, imported for its side effect by a test binary, makes the
// binary collect garbage a quarter as often: GOGC 400 instead of 100,
// unless GOGC is set in the environment.
//
//	import _ "github.com/tollgate-auth/tollgate/internal/testkit/lessgc"
//
// The tests that import it run engines, simulators and HTTP handlers over
// live heaps of tens of MB that they fill with short-lived garbage (keys,
// verdicts, JSON), and go test runs them two at a time on a machine of two
// cores. Collecting a quarter as often spends a tenth to a fifth less CPU
// on each of them, measured on a -short run (internal/lab/attack's 2.8
// CPU-seconds are 2.2, authguard's 1.6 are 1.35); the price is a heap up
// to five times the live one rather than twice, which those binaries can
// afford (at most 150 MB of resident memory each under -short, against 65
// at the default).
//
// A binary whose tests fill heaps of hundreds of MB (memstore's flood
// tests) must not import it: five times its live heap is more than a
// shared machine has to spare. Tests that measure the heap do so after
// runtime.GC, which the setting does not change. GOGC set in the
// environment still wins, so a run can be measured at the default.
package lessgc
