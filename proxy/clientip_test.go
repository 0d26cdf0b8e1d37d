package proxy_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/proxy"
)

// The load balancer in front of the proxy, in the tests that trust one.
var lbNet = netip.MustParsePrefix("10.0.0.0/8")

// An attacker who talks to the proxy directly writes what he likes in
// X-Forwarded-For and Forwarded: the address checked is his own, and the
// upstream is not handed his chain either.
func TestProxy_ASpoofedForwardedForDoesNotChooseTheAddress(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()},
		TrustedProxies: []netip.Prefix{lbNet}, ClientIPHeader: client.HeaderXForwardedFor})
	r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader("username=bob&password=x"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Forwarded-For", "198.51.100.1, 10.0.0.1")
	r.Header.Set("Forwarded", "for=198.51.100.2")
	r.Header.Set("X-Forwarded-Proto", "https")
	body(t, h.do(r, attackerAddr))
	if got := h.rec.lastCheck().IP; got != "203.0.113.66" {
		t.Errorf("checked address %q, want the attacker's own 203.0.113.66", got)
	}
	seen := h.up.requests()[0].header
	if got := seen.Values("X-Forwarded-For"); len(got) != 1 || got[0] != "203.0.113.66" {
		t.Errorf("the upstream's X-Forwarded-For = %q, want the peer alone", got)
	}
	if got := seen.Get("Forwarded"); got != "" {
		t.Errorf("the upstream got the attacker's Forwarded %q", got)
	}
	if got := seen.Get("X-Forwarded-Proto"); got != "http" {
		t.Errorf("the upstream's X-Forwarded-Proto = %q, want what this hop saw (http)", got)
	}
}

// Behind a trusted load balancer the address is the right-most hop it did
// not add itself, and the upstream gets the chain with this proxy's hop
// appended, as from any reverse proxy.
func TestProxy_BehindATrustedBalancerTheChainGoesOnWithThisHop(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()},
		TrustedProxies: []netip.Prefix{lbNet}, ClientIPHeader: client.HeaderXForwardedFor})
	r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader("username=bob&password=x"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Forwarded-For", "1.1.1.1, 203.0.113.9")
	r.Header.Set("X-Forwarded-Proto", "https")
	body(t, h.do(r, "10.0.0.1:443"))
	if got := h.rec.lastCheck().IP; got != "203.0.113.9" {
		t.Errorf("checked address %q, want 203.0.113.9", got)
	}
	seen := h.up.requests()[0].header
	if got := seen.Get("X-Forwarded-For"); got != "1.1.1.1, 203.0.113.9, 10.0.0.1" {
		t.Errorf("the upstream's X-Forwarded-For = %q, want the chain and this hop", got)
	}
	if got := seen.Get("X-Forwarded-Proto"); got != "https" {
		t.Errorf("X-Forwarded-Proto = %q, want the balancer's https", got)
	}
}

// The proxy resolves addresses as every client does: each vector of
// clients/testdata/client_ip.json, through a route, reaches the engine as
// the address the vector wants.
func TestProxy_TheClientsAddressVectors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "clients", "testdata", "client_ip.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Name    string   `json:"name"`
			Trusted []string `json:"trusted"`
			Header  string   `json:"header"`
			Cases   []struct {
				Name  string      `json:"name"`
				Peer  string      `json:"peer"`
				Lines [][2]string `json:"lines"`
				Want  string      `json:"want"`
			} `json:"cases"`
		} `json:"groups"`
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range doc.Groups {
		cfg := proxy.Config{Routes: []proxy.Route{formRoute()}}
		switch g.Header {
		case "Forwarded":
			cfg.ClientIPHeader = client.HeaderForwarded
		case "X-Forwarded-For":
			cfg.ClientIPHeader = client.HeaderXForwardedFor
		}
		for _, s := range g.Trusted {
			cfg.TrustedProxies = append(cfg.TrustedProxies, netip.MustParsePrefix(s))
		}
		h := newHarness(t, cfg)
		for _, c := range g.Cases {
			n++
			t.Run(g.Name+"/"+c.Name, func(t *testing.T) {
				r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader("username=bob&password=x"))
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for _, l := range c.Lines {
					r.Header.Add(l[0], l[1])
				}
				before := len(h.rec.checks)
				body(t, h.do(r, c.Peer))
				if len(h.rec.checks) != before+1 {
					t.Fatal("not checked")
				}
				if got := h.rec.lastCheck().IP; got != c.Want {
					t.Errorf("peer %q, %q: checked %q, want %q", c.Peer, c.Lines, got, c.Want)
				}
			})
		}
	}
	if n < 60 {
		t.Fatalf("only %d cases: the vectors did not load", n)
	}
}
