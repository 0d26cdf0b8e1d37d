package client_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"github.com/tollgate-auth/tollgate/api/client"
)

// Behind a load balancer that appends to X-Forwarded-For.
func ExampleProxies_ClientIP() {
	proxies, err := client.NewProxies(client.ProxyConfig{
		Trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Header:  client.HeaderXForwardedFor,
	})
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/login", nil)
	r.Header.Set("X-Forwarded-For", "198.51.100.1, 203.0.113.7") // the client wrote the first

	r.RemoteAddr = "10.0.0.1:34567" // through the load balancer
	fmt.Println(proxies.ClientIP(r))
	r.RemoteAddr = "198.51.100.99:4711" // straight to the service, same header
	fmt.Println(proxies.ClientIP(r))
	// Output:
	// 203.0.113.7
	// 198.51.100.99
}

// Behind two proxies that write RFC 7239 Forwarded, one of them on IPv6.
func ExampleProxies_ClientIP_forwarded() {
	proxies, err := client.NewProxies(client.ProxyConfig{
		Trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")},
		Header:  client.HeaderForwarded,
	})
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/login", nil)
	r.RemoteAddr = "10.0.0.1:34567"
	r.Header.Add("Forwarded", `for=192.0.2.1`) // forged by the client
	r.Header.Add("Forwarded", `for="[2001:db8:1::7]:4711";proto=https, for="[2001:db8:ffff::2]"`)
	fmt.Println(proxies.ClientIP(r))
	// Output:
	// 2001:db8:1::7
}
