package client_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/tollgate-auth/tollgate/api/client"
)

// Every ProxyConfig NewProxies refuses is a *ProxyConfigError naming the
// field and the prefix at fault, whose Detail is the message without the
// package's prefix: tollgate's config says Detail at proxy.trusted_proxies,
// so these are the words a person reads.
func TestNewProxies_RefusalsAreProxyConfigErrors(t *testing.T) {
	p := netip.MustParsePrefix
	tests := []struct {
		name       string
		cfg        client.ProxyConfig
		wantField  string
		wantPrefix netip.Prefix
		wantDetail string
	}{
		{"an invalid prefix", client.ProxyConfig{Trusted: []netip.Prefix{{}}, Header: client.HeaderXForwardedFor},
			"Trusted", netip.Prefix{}, "invalid trusted prefix"},
		{"every address", client.ProxyConfig{Trusted: []netip.Prefix{p("10.0.0.0/8"), p("::/0")}, Header: client.HeaderForwarded},
			"Trusted", p("::/0"), "trusted prefix ::/0 trusts every address, letting any client choose its IP"},
		{"mapped and IPv6 mixed", client.ProxyConfig{Trusted: []netip.Prefix{p("::ffff:0.0.0.0/80")}, Header: client.HeaderForwarded},
			"Trusted", p("::ffff:0.0.0.0/80"), "trusted prefix ::ffff:0.0.0.0/80 mixes IPv4-mapped and IPv6 addresses"},
		{"no header", client.ProxyConfig{Trusted: []netip.Prefix{p("10.0.0.0/8")}},
			"Header", netip.Prefix{}, "Trusted needs the Header those proxies write"},
		{"an unknown header", client.ProxyConfig{Header: client.ProxyHeader(7)},
			"Header", netip.Prefix{}, "unknown Header ProxyHeader(7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.NewProxies(tt.cfg)
			var pe *client.ProxyConfigError
			if !errors.As(err, &pe) {
				t.Fatalf("NewProxies = %v, want a *ProxyConfigError", err)
			}
			if pe.Field != tt.wantField || pe.Prefix != tt.wantPrefix || pe.Detail != tt.wantDetail {
				t.Errorf("ProxyConfigError{%q, %v, %q}, want {%q, %v, %q}", pe.Field, pe.Prefix, pe.Detail, tt.wantField, tt.wantPrefix, tt.wantDetail)
			}
			if got, want := err.Error(), "client: proxies: "+tt.wantDetail; got != want {
				t.Errorf("NewProxies error %q, want %q", got, want)
			}
		})
	}
}
