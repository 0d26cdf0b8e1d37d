package proxy

import (
	"errors"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// The device cookie's default names and lifetime.
const (
	// DefaultCookieName is CookieConfig.Name's default.
	DefaultCookieName = "__Host-tollgate-device"
	// DefaultInsecureCookieName is CookieConfig.Name's default with
	// Insecure.
	DefaultInsecureCookieName = "tollgate-device"
	// DefaultCookieMaxAge is CookieConfig.MaxAge's default: the built-in
	// policy's device_token_ttl.
	DefaultCookieMaxAge = 90 * 24 * time.Hour
	// maxCookieAge is the longest Max-Age browsers keep (RFC 6265bis).
	maxCookieAge = 400 * 24 * time.Hour
	// maxDeviceToken caps a device token, as the engine does.
	maxDeviceToken = 1024
)

// CookieConfig configures the device cookie: the proxy's own cookie, set
// on a success with the engine's device token, read back as the device
// token of the browser's later checks, and never sent to the upstream.
type CookieConfig struct {
	// Name is the cookie's name. Without Insecure it must start
	// "__Host-": browsers then take it only over HTTPS, for the whole
	// host and without Domain, so neither a sibling subdomain nor a
	// plain-HTTP attacker can plant or overwrite it. The default is
	// DefaultCookieName, or DefaultInsecureCookieName with Insecure.
	Name string
	// MaxAge is how long the browser keeps it after the last success, 1s
	// to 400 days; match it to the flow's device_token_ttl. The default is
	// DefaultCookieMaxAge (90 days).
	MaxAge time.Duration
	// Insecure drops the "__Host-" prefix and the Secure attribute, so
	// that the cookie works over plain HTTP: for tests on loopback only
	// (browsers treat http://localhost as secure, but test clients and
	// other loopback names may not). Never set it where the proxy is
	// reached over a network: the cookie is a bearer credential for its
	// device's allowance. The default is false.
	Insecure bool
}

// deviceCookie is a CookieConfig as served.
type deviceCookie struct {
	name   string
	maxAge int // seconds
	secure bool
}

func newDeviceCookie(cfg CookieConfig) (deviceCookie, error) {
	c := deviceCookie{name: cfg.Name, maxAge: int(DefaultCookieMaxAge / time.Second), secure: !cfg.Insecure}
	switch {
	case c.name == "" && cfg.Insecure:
		c.name = DefaultInsecureCookieName
	case c.name == "":
		c.name = DefaultCookieName
	}
	if !validToken(c.name) {
		return c, errors.New("proxy: the device cookie's name must be token characters")
	}
	secure := strings.HasPrefix(c.name, "__Host-") || strings.HasPrefix(c.name, "__Secure-")
	if cfg.Insecure && secure {
		return c, errors.New("proxy: an insecure device cookie cannot have a __Host- or __Secure- name (browsers refuse it without Secure)")
	}
	if !cfg.Insecure && !strings.HasPrefix(c.name, "__Host-") {
		return c, errors.New("proxy: the device cookie's name must start with __Host- (or set insecure for plain-HTTP tests)")
	}
	if cfg.MaxAge != 0 {
		if cfg.MaxAge < time.Second || cfg.MaxAge > maxCookieAge {
			return c, errors.New("proxy: the device cookie's max age must be from 1s to 400 days")
		}
		c.maxAge = int(cfg.MaxAge / time.Second)
	}
	return c, nil
}

// set adds the cookie carrying token to h, a response's header.
func (c deviceCookie) set(h http.Header, token string) {
	if !validCookieValue(token) {
		return
	}
	var b strings.Builder
	b.WriteString(c.name)
	b.WriteByte('=')
	b.WriteString(token)
	b.WriteString("; Path=/; Max-Age=")
	b.WriteString(strconv.Itoa(c.maxAge))
	b.WriteString("; HttpOnly")
	if c.secure {
		b.WriteString("; Secure")
	}
	b.WriteString("; SameSite=Lax")
	h.Add("Set-Cookie", b.String())
}

// token is the device token r's first cookie of the name holds, or "" for
// none or one that cannot be a token. The engine verifies it; a forged one
// is worth nothing.
func (c deviceCookie) token(r *http.Request) string {
	cks := r.CookiesNamed(c.name)
	if len(cks) == 0 || cks[0].Quoted || !validCookieValue(cks[0].Value) {
		return ""
	}
	return cks[0].Value
}

// validCookieValue reports whether s is 1 to maxDeviceToken RFC 6265
// cookie-octets.
func validCookieValue(s string) bool {
	if s == "" || len(s) > maxDeviceToken {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= 0x20 || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}

// stripCookie removes every cookie named name from h's Cookie lines, so
// that the upstream never sees the device token: each pair net/http would
// read as that cookie (its name trimmed of white space, as readCookies
// does). It allocates only for a line that holds name at all.
func stripCookie(h http.Header, name string) {
	lines := h["Cookie"]
	i := 0
	for i < len(lines) && !strings.Contains(lines[i], name) {
		i++
	}
	if i == len(lines) {
		return
	}
	out := append(make([]string, 0, len(lines)), lines[:i]...)
	for _, l := range lines[i:] {
		if !strings.Contains(l, name) {
			out = append(out, l)
			continue
		}
		var kept []string
		for pair := range strings.SplitSeq(l, ";") {
			pair = textproto.TrimString(pair)
			if n, _, _ := strings.Cut(pair, "="); pair == "" || textproto.TrimString(n) == name {
				continue
			}
			kept = append(kept, pair)
		}
		if len(kept) > 0 {
			out = append(out, strings.Join(kept, "; "))
		}
	}
	if len(out) == 0 {
		delete(h, "Cookie")
		return
	}
	h["Cookie"] = out
}
