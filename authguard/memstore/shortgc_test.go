package memstore_test

import (
	"flag"
	"os"
	"runtime/debug"
	"testing"
)

// TestMain collects garbage a quarter as often under -short, as
// internal/testkit/lessgc does (GOGC 400): the tests -short runs fill a
// few tens of MB with short-lived ops and keys, and spend a fifth less CPU
// so (0.55 -> 0.44 CPU-s, 36 MB resident rather than 21). The package
// does not import lessgc: its full run and its flood measurements fill
// hundreds of MB, and the measurements report the GOGC they ran at. GOGC
// set in the environment still wins.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() && os.Getenv("GOGC") == "" && os.Getenv("TOLLGATE_FLOOD") == "" && os.Getenv("MEMSTORE_MEASURE_MIB") == "" {
		debug.SetGCPercent(400)
	}
	os.Exit(m.Run())
}
