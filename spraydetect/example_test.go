package spraydetect_test

import (
	"fmt"
	"time"

	"github.com/tollgate-auth/tollgate/spraydetect"
)

func ExampleWindows_Admit() {
	// At most two distinct accounts may fail from one prefix in an hour.
	w := spraydetect.Windows{{Length: time.Hour, Limit: 2}}
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	var l spraydetect.Log
	for _, a := range []struct {
		after   time.Duration
		account string
		captcha bool
	}{
		{0, "alice", false},
		{time.Minute, "bob", false},
		{2 * time.Minute, "carol", false},
		{3 * time.Minute, "alice", false},
		{4 * time.Minute, "carol", true},
		{time.Hour + time.Minute, "dave", false},
		{time.Hour + 3*time.Minute, "dave", false},
	} {
		var r spraydetect.LogResult
		l, r = w.Admit(l, a.account, start.Add(a.after), a.captcha)
		fmt.Printf("+%v %s captcha=%v: over=%v added=%v count=%d\n", a.after, a.account, a.captcha, r.Over, r.Added, r.Count)
	}
	// Output:
	// +0s alice captcha=false: over=false added=true count=1
	// +1m0s bob captcha=false: over=false added=true count=2
	// +2m0s carol captcha=false: over=true added=false count=2
	// +3m0s alice captcha=false: over=false added=false count=2
	// +4m0s carol captcha=true: over=true added=true count=3
	// +1h1m0s dave captcha=false: over=false added=true count=2
	// +1h3m0s dave captcha=false: over=false added=false count=2
}
