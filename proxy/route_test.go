package proxy

import "testing"

func TestMatchPath(t *testing.T) {
	tests := []struct {
		p, path string
		prefix  bool
		want    bool
	}{
		{"/admin/login/", "/admin/login/", false, true},
		{"/admin/login", "/admin/login/", false, true},
		{"/ADMIN/Login/", "/admin/login/", false, true},
		{"//admin//login/", "/admin/login/", false, true},
		{"/admin/./login/", "/admin/login/", false, true},
		{"/x/../admin/login/", "/admin/login/", false, true},
		{"/../../admin/login", "/admin/login/", false, true},
		{"/admin;a=b/login;jsessionid=1/", "/admin/login/", false, true},
		{"/admin/login/x", "/admin/login/", false, false},
		{"/admin/logins", "/admin/login/", false, false},
		{"/admin/login/x", "/admin/login/", true, true},
		{"/admin/login", "/admin/login/", true, true},
		{"/admin/loginx", "/admin/login", true, false},
		{"/anything", "/", true, true},
		{"/", "/", false, true},
		{"", "/", false, true},
		{"/doku.php", "/doku.php", false, true},
		{"/DOKU.PHP", "/doku.php", false, true},
	}
	for _, tt := range tests {
		if got := matchPath(tt.p, tt.path, tt.prefix); got != tt.want {
			t.Errorf("matchPath(%q, %q, prefix %v) = %v, want %v", tt.p, tt.path, tt.prefix, got, tt.want)
		}
	}
}

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{
		"/a//b":      "/a/b",
		"/a/./b/":    "/a/b/",
		"/a/../../b": "/b",
		"/a;x/b;y":   "/a/b",
		"a/b":        "/a/b",
		"//":         "/",
		"/..":        "/",
	} {
		if got := cleanPath(in); got != want {
			t.Errorf("cleanPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMatchMethod(t *testing.T) {
	if !matchMethod("POST", nil) || !matchMethod("post", nil) || matchMethod("GET", nil) {
		t.Error("the default is POST alone")
	}
	if !matchMethod("get", []string{"GET", "POST"}) || matchMethod("PUT", []string{"GET", "POST"}) {
		t.Error("a list is compared case-insensitively")
	}
}
