package spraydetect_test

import (
	"fmt"
	"net/netip"
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

func ExampleWidePrefix() {
	// One customer sprays from a fresh /64 of its /48 each time. Grouping
	// counts every /64 as a new client; WidePrefix gives the /56 and /48
	// that aggregate limits count. 6to4 and IPv4 have no wide prefix: they
	// are counted as their IPv4 address.
	g := spraydetect.Grouping{}
	wide := func(a netip.Addr, bits int) string {
		if p, ok := spraydetect.WidePrefix(a, bits); ok {
			return p.String()
		}
		return "-"
	}
	for _, s := range []string{
		"2001:db8:7:101::1",
		"2001:db8:7:102::1",
		"2001:db8:7:ff00::1",
		"2002:c000:204:1::1",
		"192.0.2.4",
	} {
		a := netip.MustParseAddr(s)
		fmt.Printf("%-18s client %-18s /56 %-18s /48 %s\n", a, g.Prefix(a), wide(a, 56), wide(a, 48))
	}
	// Output:
	// 2001:db8:7:101::1  client 2001:db8:7:101::/64 /56 2001:db8:7:100::/56 /48 2001:db8:7::/48
	// 2001:db8:7:102::1  client 2001:db8:7:102::/64 /56 2001:db8:7:100::/56 /48 2001:db8:7::/48
	// 2001:db8:7:ff00::1 client 2001:db8:7:ff00::/64 /56 2001:db8:7:ff00::/56 /48 2001:db8:7::/48
	// 2002:c000:204:1::1 client 192.0.2.4/32       /56 -                  /48 -
	// 192.0.2.4          client 192.0.2.4/32       /56 -                  /48 -
}

func ExampleEmbeddedIPv4() {
	for _, s := range []string{
		"2002:c000:204::1",                     // 6to4: 2002:V4::/48
		"2001:0:4136:e378:8000:63bf:3fff:fdd2", // Teredo: client 3fff:fdd2 inverted
		"2001:db8::1",                          // native IPv6
		"64:ff9b::192.0.2.4",                   // NAT64: not looked through
	} {
		v4, ok := spraydetect.EmbeddedIPv4(netip.MustParseAddr(s))
		fmt.Println(s, v4, ok)
	}
	// Output:
	// 2002:c000:204::1 192.0.2.4 true
	// 2001:0:4136:e378:8000:63bf:3fff:fdd2 192.0.2.45 true
	// 2001:db8::1 2001:db8::1 false
	// 64:ff9b::192.0.2.4 64:ff9b::c000:204 false
}
