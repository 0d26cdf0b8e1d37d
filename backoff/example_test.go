package backoff_test

import (
	"fmt"
	"time"

	"github.com/tollgate-auth/tollgate/backoff"
)

func ExamplePolicy_Delay() {
	p := backoff.Policy{
		Free:        2,
		Base:        time.Second,
		Factor:      2,
		Max:         10 * time.Second,
		ForgetAfter: time.Hour,
	}
	for n := 0; n <= 7; n++ {
		fmt.Printf("after %d failures: wait %v\n", n, p.Delay(n))
	}
	// Output:
	// after 0 failures: wait 0s
	// after 1 failures: wait 0s
	// after 2 failures: wait 1s
	// after 3 failures: wait 2s
	// after 4 failures: wait 4s
	// after 5 failures: wait 8s
	// after 6 failures: wait 10s
	// after 7 failures: wait 10s
}

func ExamplePolicy_Charge() {
	p := backoff.Policy{Free: 1, Base: time.Second, Factor: 2, Max: time.Minute, ForgetAfter: time.Hour}
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	var s backoff.State
	for _, after := range []time.Duration{0, 0, 500 * time.Millisecond, time.Second, time.Second} {
		var d backoff.Decision
		s, d = p.Charge(s, start.Add(after), "", 0)
		fmt.Printf("+%v: charged=%v wait=%v failures=%d\n", after, d.Charged, d.Wait, s.Failures)
	}
	// Output:
	// +0s: charged=true wait=0s failures=1
	// +0s: charged=false wait=1s failures=1
	// +500ms: charged=false wait=500ms failures=1
	// +1s: charged=true wait=0s failures=2
	// +1s: charged=false wait=2s failures=2
}
