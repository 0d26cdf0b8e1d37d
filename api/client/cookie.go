package client

import (
	"errors"
	"net/http"
	"strings"
	"time"
)

// DefaultDeviceCookieName is the device cookie's name unless
// DeviceCookieConfig says otherwise.
const DefaultDeviceCookieName = "__Host-tollgate-device"

// maxDeviceTokenBytes caps a device token, as tollgate does (openapi.yaml's
// Token: at most 1024 bytes).
const maxDeviceTokenBytes = 1024

// maxCookieAge is the longest Max-Age browsers keep: RFC 6265bis caps it at
// 400 days, as tollgate caps device_token_ttl.
const maxCookieAge = 400 * 24 * time.Hour

// defaultCookieAge is the built-in policy's device_token_ttl.
const defaultCookieAge = 90 * 24 * time.Hour

// DeviceCookieConfig configures a DeviceCookie.
type DeviceCookieConfig struct {
	// Name is the cookie's name: "__Host-" and RFC 6265 token characters.
	// Give each device_trust group of flows a cookie of its own (a token
	// is trusted only by the flows of the group that issued it). The
	// default is DefaultDeviceCookieName.
	Name string
	// MaxAge is how long the browser keeps the cookie after it was last
	// set, in whole seconds from 1s to 400 days (the most browsers keep).
	// Match it to the flow's device_token_ttl: a token is useless once
	// expired, and a cookie that goes first loses the device its own
	// allowance. Each success report returns a fresh token, so Set renews
	// both. The default is 90 days, the built-in policy's device_token_ttl.
	MaxAge time.Duration
}

// DeviceCookie keeps tollgate's device token in a cookie: "__Host-" named,
// Path=/, Secure, HttpOnly, SameSite=Lax, no Domain, and a Max-Age. The
// "__Host-" prefix makes browsers accept it only from a secure origin,
// without Domain and for the whole host, so neither a sibling subdomain
// nor a plain-HTTP attacker can plant or overwrite one; HttpOnly keeps it
// from scripts. Browsers treat http://localhost as secure, so it works in
// development there.
//
// The token is a bearer credential for its device's own allowance of
// failed logins: whoever holds a copy shares that allowance (never the
// owner's other devices'). Never log it or put it in a URL. The zero
// DeviceCookie has the defaults; a DeviceCookie is safe for concurrent use.
type DeviceCookie struct {
	name   string
	maxAge int // seconds
}

// NewDeviceCookie returns a DeviceCookie for cfg, or an error when Name is
// not "__Host-" followed by token characters or MaxAge is out of range.
func NewDeviceCookie(cfg DeviceCookieConfig) (*DeviceCookie, error) {
	c := &DeviceCookie{}
	if cfg.Name != "" {
		name, ok := strings.CutPrefix(cfg.Name, "__Host-")
		if !ok || name == "" || !isToken(name) {
			return nil, errors.New("client: device cookie: Name must be __Host- and token characters")
		}
		c.name = cfg.Name
	}
	if cfg.MaxAge != 0 {
		if cfg.MaxAge < time.Second || cfg.MaxAge > maxCookieAge {
			return nil, errors.New("client: device cookie: MaxAge must be from 1s to 400 days")
		}
		c.maxAge = int(cfg.MaxAge / time.Second)
	}
	return c, nil
}

// Set stores token in the cookie: one Set-Cookie header
// `<name>=<token>; Path=/; Max-Age=<seconds>; HttpOnly; Secure; SameSite=Lax`.
// An empty token (a report that returned none) writes nothing, so Set can
// take every report's device_token. A token longer than 1024 bytes or with
// bytes a cookie cannot carry is an error, and nothing is written. Call it
// before the response's header is written.
func (c *DeviceCookie) Set(w http.ResponseWriter, token string) error {
	if token == "" {
		return nil
	}
	if !validDeviceToken(token) {
		return errors.New("client: device cookie: the token is too long or not cookie-safe")
	}
	http.SetCookie(w, c.cookie(token, c.age()))
	return nil
}

// Token returns the device token the request's cookie holds (the first, if
// it sends several), or "" when there is none or it is malformed: quoted, empty, longer than 1024 bytes
// or with bytes a cookie cannot carry. It never fails: send "" as no token.
// tollgate verifies the token; a forged one is worth nothing.
func (c *DeviceCookie) Token(r *http.Request) string {
	cs := r.CookiesNamed(c.cookieName())
	if len(cs) == 0 || cs[0].Quoted || !validDeviceToken(cs[0].Value) {
		return ""
	}
	return cs[0].Value
}

// Clear tells the browser to delete the cookie: a Set-Cookie header with an
// empty value, Max-Age=0 and the attributes Set uses (browsers only accept a
// "__Host-" cookie, even to delete it, with Path=/ and Secure). Call it
// before the response's header is written.
func (c *DeviceCookie) Clear(w http.ResponseWriter) {
	http.SetCookie(w, c.cookie("", -1))
}

// cookie is the cookie with value and Max-Age maxAge (negative: 0).
func (c *DeviceCookie) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     c.cookieName(),
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		Secure:   true,
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
	}
}

// cookieName is Name or its default.
func (c *DeviceCookie) cookieName() string {
	if c == nil || c.name == "" {
		return DefaultDeviceCookieName
	}
	return c.name
}

// age is MaxAge in seconds or its default.
func (c *DeviceCookie) age() int {
	if c == nil || c.maxAge == 0 {
		return int(defaultCookieAge / time.Second)
	}
	return c.maxAge
}

// validDeviceToken reports whether s is 1 to 1024 RFC 6265 cookie-octets.
func validDeviceToken(s string) bool {
	if s == "" || len(s) > maxDeviceTokenBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}

// isToken reports whether s is non-empty and only RFC 9110 token characters.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return false
		}
	}
	return true
}
