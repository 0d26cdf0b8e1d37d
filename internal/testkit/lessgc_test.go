package testkit

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/tollgate-auth/tollgate/internal/testkit/lessgc"
)

// TestLessGC_ImportingItSetsGOGC: the blank import is all a test binary
// needs to run at lessgc.Percent (this one imports it), unless GOGC is set
// in the environment, which wins. (Its own package has no tests: a test
// binary more would cost each run a link.)
func TestLessGC_ImportingItSetsGOGC(t *testing.T) {
	got := debug.SetGCPercent(lessgc.Percent)
	debug.SetGCPercent(got)
	if env := os.Getenv("GOGC"); env != "" {
		t.Skipf("GOGC=%s is set in the environment, which wins", env)
	}
	if got != lessgc.Percent {
		t.Errorf("GOGC = %d, want lessgc.Percent, %d", got, lessgc.Percent)
	}
}
