package proxy

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

func TestStripCookie(t *testing.T) {
	const name = "__Host-tollgate-device"
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"none", []string{"a=1; b=2"}, []string{"a=1; b=2"}},
		{"no Cookie header", nil, nil},
		{"alone", []string{name + "=tok"}, nil},
		{"first", []string{name + "=tok; a=1"}, []string{"a=1"}},
		{"middle", []string{"a=1; " + name + "=tok; b=2"}, []string{"a=1; b=2"}},
		{"twice", []string{name + "=x; a=1; " + name + "=y"}, []string{"a=1"}},
		{"several lines", []string{"a=1", name + "=x", "b=2; " + name + "=y"}, []string{"a=1", "b=2"}},
		{"a name that only ends like it", []string{"x" + name + "=1"}, []string{"x" + name + "=1"}},
		{"a value that holds the name", []string{"a=" + name + "=1"}, []string{"a=" + name + "=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.in != nil {
				h["Cookie"] = append([]string(nil), tt.in...)
			}
			stripCookie(h, name)
			if got := h["Cookie"]; !slices.Equal(got, tt.want) {
				t.Errorf("Cookie = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDeviceCookie(t *testing.T) {
	c, err := newDeviceCookie(CookieConfig{})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	c.set(h, "tok.en-1")
	if got, want := h.Get("Set-Cookie"), "__Host-tollgate-device=tok.en-1; Path=/; Max-Age=7776000; HttpOnly; Secure; SameSite=Lax"; got != want {
		t.Errorf("Set-Cookie = %q, want %q", got, want)
	}
	c, _ = newDeviceCookie(CookieConfig{Insecure: true, MaxAge: time.Hour})
	h = http.Header{}
	c.set(h, "tok")
	if got, want := h.Get("Set-Cookie"), "tollgate-device=tok; Path=/; Max-Age=3600; HttpOnly; SameSite=Lax"; got != want {
		t.Errorf("insecure Set-Cookie = %q, want %q", got, want)
	}
	c.set(h, "bad;token") // not cookie-safe: nothing
	if n := len(h.Values("Set-Cookie")); n != 1 {
		t.Errorf("a token that is not cookie-safe was set")
	}
	for _, bad := range []CookieConfig{
		{Name: "device"},                        // secure without __Host-
		{Name: "__Host-device", Insecure: true}, // a prefix browsers refuse without Secure
		{Name: "__Secure-device", Insecure: true},
		{Name: "bad name"},
		{MaxAge: time.Millisecond},
		{MaxAge: 401 * 24 * time.Hour},
	} {
		if _, err := newDeviceCookie(bad); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
	r, _ := http.NewRequest("GET", "/", nil)
	r.Header.Set("Cookie", `__Host-tollgate-device="quoted"; a=1`)
	c, _ = newDeviceCookie(CookieConfig{})
	if got := c.token(r); got != "" {
		t.Errorf("a quoted token was read: %q", got)
	}
	r.Header.Set("Cookie", `a=1; __Host-tollgate-device=tok`)
	if got := c.token(r); got != "tok" {
		t.Errorf("token = %q", got)
	}
}
