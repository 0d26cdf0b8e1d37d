package config

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/tollgate-auth/tollgate/api/client"
)

// api/client's refusal of the proxies is read by its type, never by its
// words: one whose message starts otherwise (wrapped under another prefix)
// still says its Detail at proxy.trusted_proxies and its line, with the
// client.ProxyConfigError beneath for errors.As.
func TestParse_AProxiesErrorWordedOtherwiseStillSaysItsDetailAtItsLine(t *testing.T) {
	defer func(f func(client.ProxyConfig) (*client.Proxies, error)) { newProxies = f }(newProxies)
	pe := &client.ProxyConfigError{Field: "Trusted", Prefix: netip.MustParsePrefix("10.0.0.0/8"), Detail: "trusted prefix 10.0.0.0/8 is refused"}
	newProxies = func(client.ProxyConfig) (*client.Proxies, error) { return nil, fmt.Errorf("proxies: %w", pe) }

	_, err := Parse([]byte("proxy:\n  listen: :8443\n  upstream: http://x\n  client_ip_header: forwarded\n  trusted_proxies: [10.0.0.0/8]\n"))
	if got, want := fmt.Sprint(err), "line 5: proxy.trusted_proxies: trusted prefix 10.0.0.0/8 is refused"; got != want {
		t.Errorf("Parse = %q, want %q", got, want)
	}
	var back *client.ProxyConfigError
	if !errors.As(err, &back) || back != pe {
		t.Errorf("Parse = %#v, want the client.ProxyConfigError beneath", err)
	}
}

// The proxies' errors read as they did before they were typed: the key's
// line, proxy.trusted_proxies, and api/client's words.
func TestParse_ProxiesErrorsSayTheirWordsAtTheirLine(t *testing.T) {
	for _, tt := range []struct{ name, yaml, want string }{
		{"every address", "proxy:\n  listen: :8443\n  upstream: http://x\n  client_ip_header: forwarded\n  trusted_proxies: [10.0.0.0/8, 0.0.0.0/0]\n",
			"line 5: proxy.trusted_proxies: trusted prefix 0.0.0.0/0 trusts every address, letting any client choose its IP"},
		{"IPv4-mapped and IPv6 mixed", "proxy:\n  listen: :8443\n  upstream: http://x\n  client_ip_header: x-forwarded-for\n  trusted_proxies: [\"::ffff:0.0.0.0/80\"]\n",
			"line 5: proxy.trusted_proxies: trusted prefix ::ffff:0.0.0.0/80 mixes IPv4-mapped and IPv6 addresses"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse = %v, want %q", err, tt.want)
			}
		})
	}
}
