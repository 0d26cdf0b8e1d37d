package client_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
)

// A device token as tollgate issues them: a JWT.
const deviceTestToken = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0IjoiZGVmYXVsdCJ9.mot8bV5PMCESA_Tl1se4qQ"

func TestDeviceCookie_SetWritesExactlyTheseAttributes(t *testing.T) {
	long, err := client.NewDeviceCookie(client.DeviceCookieConfig{Name: "__Host-otp-device", MaxAge: 400 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		c    *client.DeviceCookie
		want string
	}{
		{"defaults: 90 days", &client.DeviceCookie{},
			"__Host-tollgate-device=" + deviceTestToken + "; Path=/; Max-Age=7776000; HttpOnly; Secure; SameSite=Lax"},
		{"nil: the defaults", nil,
			"__Host-tollgate-device=" + deviceTestToken + "; Path=/; Max-Age=7776000; HttpOnly; Secure; SameSite=Lax"},
		{"a name and 400 days", long,
			"__Host-otp-device=" + deviceTestToken + "; Path=/; Max-Age=34560000; HttpOnly; Secure; SameSite=Lax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			if err := tt.c.Set(rec, deviceTestToken); err != nil {
				t.Fatal(err)
			}
			got := rec.Header().Values("Set-Cookie")
			if len(got) != 1 || got[0] != tt.want {
				t.Fatalf("Set-Cookie = %q, want [%q]", got, tt.want)
			}
			// And as a browser parses it.
			ck, err := http.ParseSetCookie(got[0])
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(ck.Name, "__Host-") || ck.Path != "/" || ck.Domain != "" || !ck.Secure ||
				!ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.MaxAge <= 0 || !ck.Expires.IsZero() {
				t.Errorf("parsed cookie %+v lacks __Host-, Path=/, no Domain, Secure, HttpOnly, SameSite=Lax or Max-Age", ck)
			}
		})
	}
}

func TestDeviceCookie_RoundTrip(t *testing.T) {
	var c client.DeviceCookie
	rec := httptest.NewRecorder()
	if err := c.Set(rec, deviceTestToken); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/login", nil)
	r.AddCookie(&http.Cookie{Name: "session", Value: "s1"})
	for _, ck := range rec.Result().Cookies() {
		r.AddCookie(ck)
	}
	if got := c.Token(r); got != deviceTestToken {
		t.Errorf("Token = %q, want %q", got, deviceTestToken)
	}
}

func TestDeviceCookie_TokenReadsMalformedAsNone(t *testing.T) {
	max := strings.Repeat("a", 1024)
	tests := []struct {
		name   string
		cookie string // the request's Cookie header; "" for none
		want   string
	}{
		{"no cookie", "", ""},
		{"another cookie", "session=s1", ""},
		{"the name without its prefix", "tollgate-device=" + deviceTestToken, ""},
		{"the token", "session=s1; __Host-tollgate-device=" + deviceTestToken, deviceTestToken},
		{"1024 bytes", "__Host-tollgate-device=" + max, max},
		{"1025 bytes", "__Host-tollgate-device=" + max + "a", ""},
		{"a megabyte", "__Host-tollgate-device=" + strings.Repeat("a", 1<<20), ""},
		{"empty", "__Host-tollgate-device=", ""},
		{"quoted", `__Host-tollgate-device="` + deviceTestToken + `"`, ""},
		{"a comma", "__Host-tollgate-device=a,b", ""},
		{"a space", "__Host-tollgate-device=a b", ""},
		{"a backslash", `__Host-tollgate-device=a\b`, ""},
		{"non-ASCII", "__Host-tollgate-device=t\u00f6ken", ""},
		{"a control byte", "__Host-tollgate-device=a\x01b", ""},
		{"the first of two", "__Host-tollgate-device=first; __Host-tollgate-device=second", "first"},
		{"a malformed first of two: none", "__Host-tollgate-device=a,b; __Host-tollgate-device=second", ""},
	}
	var c client.DeviceCookie
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.cookie != "" {
				r.Header.Set("Cookie", tt.cookie)
			}
			if got := c.Token(r); got != tt.want {
				t.Errorf("Token(Cookie: %.60q) = %.60q, want %.60q", tt.cookie, got, tt.want)
			}
		})
	}
}

func TestDeviceCookie_SetRefusesWhatACookieCannotCarry(t *testing.T) {
	tests := []struct {
		name  string
		token string
		ok    bool
	}{
		{"empty: nothing to store", "", true},
		{"1024 bytes", strings.Repeat("a", 1024), true},
		{"1025 bytes", strings.Repeat("a", 1025), false},
		{"a semicolon", "a;Domain=example.com", false},
		{"a line break", "a\r\nSet-Cookie: x=y", false},
		{"a quote", `a"b`, false},
		{"a space", "a b", false},
	}
	var c client.DeviceCookie
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			err := c.Set(rec, tt.token)
			if got := err == nil; got != tt.ok {
				t.Errorf("Set(%.40q) error = %v, want ok %v", tt.token, err, tt.ok)
			}
			wantHeaders := 1
			if tt.token == "" || !tt.ok {
				wantHeaders = 0
			}
			if got := len(rec.Header().Values("Set-Cookie")); got != wantHeaders {
				t.Errorf("Set(%.40q) wrote %d Set-Cookie headers, want %d", tt.token, got, wantHeaders)
			}
		})
	}
}

func TestDeviceCookie_Clear(t *testing.T) {
	var c client.DeviceCookie
	rec := httptest.NewRecorder()
	c.Clear(rec)
	want := "__Host-tollgate-device=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax"
	if got := rec.Header().Values("Set-Cookie"); len(got) != 1 || got[0] != want {
		t.Errorf("Set-Cookie = %q, want [%q]", got, want)
	}
}

func TestNewDeviceCookie(t *testing.T) {
	tests := []struct {
		name string
		cfg  client.DeviceCookieConfig
		ok   bool
	}{
		{"defaults", client.DeviceCookieConfig{}, true},
		{"a __Host- name", client.DeviceCookieConfig{Name: "__Host-otp"}, true},
		{"no prefix", client.DeviceCookieConfig{Name: "tollgate-device"}, false},
		{"__Secure- prefix", client.DeviceCookieConfig{Name: "__Secure-tollgate-device"}, false},
		{"the prefix in lower case", client.DeviceCookieConfig{Name: "__host-tollgate-device"}, false},
		{"the prefix alone", client.DeviceCookieConfig{Name: "__Host-"}, false},
		{"a space", client.DeviceCookieConfig{Name: "__Host-a b"}, false},
		{"an equals sign", client.DeviceCookieConfig{Name: "__Host-a=b"}, false},
		{"one second", client.DeviceCookieConfig{MaxAge: time.Second}, true},
		{"400 days", client.DeviceCookieConfig{MaxAge: 400 * 24 * time.Hour}, true},
		{"under a second", client.DeviceCookieConfig{MaxAge: 500 * time.Millisecond}, false},
		{"negative", client.DeviceCookieConfig{MaxAge: -time.Hour}, false},
		{"past the browsers' cap", client.DeviceCookieConfig{MaxAge: 401 * 24 * time.Hour}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.NewDeviceCookie(tt.cfg)
			if got := err == nil; got != tt.ok {
				t.Errorf("NewDeviceCookie(%+v) error = %v, want ok %v", tt.cfg, err, tt.ok)
			}
		})
	}
}
