package authguard

import (
	"testing"
	"time"
)

// TestAlgorithms_TableRowsAreComplete: every row of the algorithm table
// has a name that parses back to it, a parameter kind that says how it is
// kept (a rate algorithm takes a window, a rate or a conversion's
// parameters and has its limits functions), and a description.
func TestAlgorithms_TableRowsAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range Algorithms() {
		row := a.row()
		if row.name == "" || seen[row.name] {
			t.Errorf("algorithm %d: name %q empty or taken", a, row.name)
		}
		seen[row.name] = true
		if got, err := ParseAlgorithm(row.name); err != nil || got != a {
			t.Errorf("%s: parses as %v, %v", a, got, err)
		}
		rateParam := row.param == ParamWindow || row.param == ParamRate || row.param == ParamConversion
		switch {
		case row.param == 0:
			t.Errorf("%s: no parameter kind", a)
		case rateParam != (row.rate != nil):
			t.Errorf("%s: parameter kind %d, but rate functions %v", a, row.param, row.rate != nil)
		case row.rate != nil && (row.rate.validate == nil || row.rate.take == nil || row.rate.giveBack == nil):
			t.Errorf("%s: incomplete rate functions", a)
		case row.describe == nil:
			t.Errorf("%s: no description", a)
		}
		if (row.queues || row.failureLog) && row.rate == nil {
			t.Errorf("%s: queues or logs failures, yet is no rate algorithm", a)
		}
	}
	if Algorithm(0).String() != "unknown" || Algorithm(len(algorithms)).Param() != 0 || Algorithm(0).IsRate() {
		t.Error("an unknown algorithm has a row")
	}
}

// TestAlgorithms_TakeAllocatesAsTheAlgorithm: running an algorithm
// through its row allocates only what the state's boxing does.
func TestAlgorithms_TakeAllocatesAsTheAlgorithm(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	r := RateLimit{Algorithm: TokenBucket, Interval: time.Second, Limit: 3}
	var state any = int64(0)
	if n := testing.AllocsPerRun(100, func() { _, _ = r.take(state, now, 1) }); n > 1 { // the new TAT's box
		t.Errorf("a token bucket's take allocates %v times, want at most 1", n)
	}
}
