package config

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/netip"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"go.yaml.in/yaml/v3"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/proxy"
)

// Proxy is the reverse proxy's configuration (the file's proxy section):
// a listener of its own in front of one upstream, whose login routes are
// checked on the server's engine (package proxy). Its captcha verdicts
// are answered with the challenge section's challenge.
type Proxy struct {
	// Listen is the proxy's host:port. Unlike the API's it may be any
	// address: the proxy faces end users, and the API's rule (loopback
	// without caller authentication) stays the API's. Required.
	Listen string
	// Upstream is where requests go: an http or https URL. Required.
	Upstream *url.URL
	// TLS, when set, serves the proxy's listener over HTTPS with this
	// certificate and key (reloaded as the API's are). The default is nil:
	// plain HTTP, for a proxy behind a TLS-terminating balancer.
	TLS *TLSConfig
	// TrustedProxies and ClientIPHeader are the balancers in front of the
	// proxy and the forwarding header they write (proxy.Config's). The
	// default is none: the connection's peer.
	TrustedProxies []netip.Prefix
	ClientIPHeader client.ProxyHeader
	// RewriteHost sends the upstream's host as Host. The default is false:
	// the client's.
	RewriteHost bool
	// UpstreamTimeout bounds the wait for the upstream's response headers.
	// The default is 30s.
	UpstreamTimeout time.Duration
	// Cookie is the device cookie. The default is proxy's.
	Cookie proxy.CookieConfig
	// DelayPage is the operator's delay page (html/template, executed with
	// a proxy.DelayPageData), read from DelayPageFile. The default is nil:
	// the built-in page.
	DelayPage     *template.Template
	DelayPageFile string
	// Routes are the inspected routes, checked against the file's policy.
	Routes []proxy.Route

	// sends names the routes of send flows, which classify nothing.
	sends map[string]bool
}

// fileProxy is the YAML form of Proxy.
type fileProxy struct {
	Listen          string      `yaml:"listen"`
	Upstream        string      `yaml:"upstream"`
	TLS             *fileTLS    `yaml:"tls"`
	TrustedProxies  []string    `yaml:"trusted_proxies"`
	ClientIPHeader  string      `yaml:"client_ip_header"`
	RewriteHost     bool        `yaml:"rewrite_host"`
	UpstreamTimeout Duration    `yaml:"upstream_timeout"`
	DeviceCookie    fileCookie  `yaml:"device_cookie"`
	DelayPage       string      `yaml:"delay_page"`
	Routes          []fileRoute `yaml:"routes"`
}

type fileCookie struct {
	Name     string   `yaml:"name"`
	MaxAge   Duration `yaml:"max_age"`
	Insecure bool     `yaml:"insecure"`
}

type fileRoute struct {
	Name                 string   `yaml:"name"`
	Flow                 string   `yaml:"flow"`
	Mode                 string   `yaml:"mode"`
	Methods              []string `yaml:"methods"`
	Path                 string   `yaml:"path"`
	Prefix               bool     `yaml:"prefix"`
	Body                 string   `yaml:"body"`
	Account              string   `yaml:"account"`
	Password             string   `yaml:"password"`
	Destination          string   `yaml:"destination"`
	Channel              string   `yaml:"channel"`
	ChannelField         string   `yaml:"channel_field"`
	RefuseWithoutAccount bool     `yaml:"refuse_without_account"`
	MaxBody              string   `yaml:"max_body"`
	ResponseBody         string   `yaml:"response_body"`
	StepUpPage           string   `yaml:"step_up_page"`
	StepUpLogout         string   `yaml:"step_up_logout"`
	StepUpPass           []string `yaml:"step_up_pass"`
	// Success and Failure are a match or a list of them.
	Success yaml.Node `yaml:"success"`
	Failure yaml.Node `yaml:"failure"`
}

type fileMatch struct {
	Status        []int     `yaml:"status"`
	Location      string    `yaml:"location"`
	LocationNot   string    `yaml:"location_not"`
	Cookie        string    `yaml:"cookie"`
	CookiePattern string    `yaml:"cookie_pattern"`
	Header        string    `yaml:"header"`
	HeaderValue   string    `yaml:"header_value"`
	BodyContains  string    `yaml:"body_contains"`
	JSON          string    `yaml:"json"`
	JSONValue     yaml.Node `yaml:"json_value"`
}

// proxyConfig checks fp against policy, the file's, and reads the files
// it names. On a mistake it returns the path in the file it is at.
func proxyConfig(fp *fileProxy, policy *authguard.Policy, apiListen string) (*Proxy, string, error) {
	p := &Proxy{UpstreamTimeout: proxy.DefaultUpstreamTimeout, DelayPageFile: fp.DelayPage}
	if fp.Listen == "" {
		return nil, "proxy.listen", errors.New("is required: the proxy's own host:port, such as 0.0.0.0:8443")
	}
	if err := checkListen(fp.Listen); err != nil {
		return nil, "proxy.listen", err
	}
	if sameAddr(fp.Listen, apiListen) {
		return nil, "proxy.listen", fmt.Errorf("%q is the API's listen address: the proxy needs a listener of its own", fp.Listen)
	}
	p.Listen = fp.Listen
	u, err := url.Parse(fp.Upstream)
	if fp.Upstream == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, "proxy.upstream", fmt.Errorf("%q is not an http(s) URL without credentials, query or fragment, such as http://127.0.0.1:8000", fp.Upstream)
	}
	p.Upstream = u
	if t := fp.TLS; t != nil {
		if t.CertFile == "" || t.KeyFile == "" {
			return nil, "proxy.tls", errors.New("give cert_file and key_file (PEM)")
		}
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			return nil, "proxy.tls", err
		}
		p.TLS = &TLSConfig{CertFile: t.CertFile, KeyFile: t.KeyFile}
	}
	for i, s := range fp.TrustedProxies {
		pf, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Sprintf("proxy.trusted_proxies[%d]", i), fmt.Errorf("%q is not an address or CIDR prefix", s)
			}
			pf = netip.PrefixFrom(a, a.BitLen())
		}
		p.TrustedProxies = append(p.TrustedProxies, pf)
	}
	switch strings.ToLower(fp.ClientIPHeader) {
	case "":
	case "x-forwarded-for":
		p.ClientIPHeader = client.HeaderXForwardedFor
	case "forwarded":
		p.ClientIPHeader = client.HeaderForwarded
	default:
		return nil, "proxy.client_ip_header", fmt.Errorf("%q is not x-forwarded-for or forwarded", fp.ClientIPHeader)
	}
	if _, err := newProxies(client.ProxyConfig{Trusted: p.TrustedProxies, Header: p.ClientIPHeader}); err != nil {
		msg := proxiesDetail(err)
		if len(p.TrustedProxies) > 0 && p.ClientIPHeader == client.HeaderNone {
			msg = "trusted_proxies need the client_ip_header they write (x-forwarded-for or forwarded)"
		}
		return nil, "proxy.trusted_proxies", said(msg, err, false)
	}
	p.RewriteHost = fp.RewriteHost
	if d := time.Duration(fp.UpstreamTimeout); d != 0 {
		if d < 100*time.Millisecond || d > 10*time.Minute {
			return nil, "proxy.upstream_timeout", errors.New("must be between 100ms and 10m")
		}
		p.UpstreamTimeout = d
	}
	p.Cookie = proxy.CookieConfig{Name: fp.DeviceCookie.Name, MaxAge: time.Duration(fp.DeviceCookie.MaxAge), Insecure: fp.DeviceCookie.Insecure}
	if err := checkCookie(p.Cookie); err != nil {
		return nil, "proxy.device_cookie", err
	}
	if fp.DelayPage != "" {
		data, err := os.ReadFile(fp.DelayPage)
		if err != nil {
			return nil, "proxy.delay_page", err
		}
		t, err := template.New("delay").Parse(string(data))
		if err == nil {
			err = t.Execute(&bytes.Buffer{}, proxy.DelayPageData{Seconds: 1})
		}
		if err != nil {
			return nil, "proxy.delay_page", fmt.Errorf("%s: %w", fp.DelayPage, err)
		}
		p.DelayPage = t
	}
	for i := range fp.Routes {
		rt, path, err := routeConfig(&fp.Routes[i], i)
		if err != nil {
			return nil, path, err
		}
		p.Routes = append(p.Routes, rt)
	}
	if err := proxy.CheckRoutes(p.Routes, policy); err != nil {
		var re *proxy.RouteError
		if errors.As(err, &re) {
			path, msg := routeErrorPath(re)
			return nil, path, said(msg, err, saysOf(msg))
		}
		return nil, "proxy.routes", err
	}
	p.sends = map[string]bool{}
	for _, rt := range p.Routes {
		p.sends[rt.Name] = policy.Flow(rt.Flow).Kind == authguard.Sends
	}
	return p, "", nil
}

// sameAddr reports whether two listen addresses are one: the same port
// on the same host, or either on every address.
func sameAddr(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb || pa == "0" {
		return false
	}
	any := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || any(ha) || any(hb)
}

// checkCookie checks the device cookie as proxy.New will.
func checkCookie(c proxy.CookieConfig) error {
	name := c.Name
	switch {
	case name == "":
	case !isToken(name):
		return errors.New("name must be cookie-name characters")
	case c.Insecure && (strings.HasPrefix(name, "__Host-") || strings.HasPrefix(name, "__Secure-")):
		return errors.New("an insecure cookie cannot have a __Host- or __Secure- name: browsers refuse those without Secure")
	case !c.Insecure && !strings.HasPrefix(name, "__Host-"):
		return errors.New("name must start with __Host- (set insecure: true only for plain-HTTP tests on loopback)")
	}
	if c.MaxAge != 0 && (c.MaxAge < time.Second || c.MaxAge > 400*24*time.Hour) {
		return errors.New("max_age must be from 1s to 400d")
	}
	return nil
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// routeConfig reads the i-th route. Its path names the route as the line
// index does: by name, else by index.
func routeConfig(fr *fileRoute, i int) (proxy.Route, string, error) {
	at := "proxy.routes[" + strconv.Itoa(i) + "]"
	if fr.Name != "" {
		at = "proxy.routes[" + fr.Name + "]"
	}
	rt := proxy.Route{Name: fr.Name, Flow: fr.Flow, Methods: fr.Methods, Path: fr.Path, Prefix: fr.Prefix,
		Account: fr.Account, Password: fr.Password, Destination: fr.Destination, Channel: fr.Channel, ChannelField: fr.ChannelField,
		RefuseWithoutAccount: fr.RefuseWithoutAccount, StepUpLogout: fr.StepUpLogout}
	var err error
	if fr.Mode != "" {
		if rt.Mode, err = proxy.ParseMode(fr.Mode); err != nil {
			return rt, at + ".mode", err
		}
	}
	if fr.Body != "" {
		if rt.Body, err = proxy.ParseBodyFormat(fr.Body); err != nil {
			return rt, at + ".body", err
		}
	}
	for _, s := range []struct {
		key, v string
		max    int64
		out    *int64
	}{{"max_body", fr.MaxBody, proxy.MaxMaxBodyBytes, &rt.MaxBodyBytes}, {"response_body", fr.ResponseBody, proxy.MaxResponseBodyBytes, &rt.ResponseBodyBytes}} {
		if s.v == "" {
			continue
		}
		n, err := humanize.ParseBytes(s.v)
		if err != nil || n == 0 || n > uint64(s.max) {
			return rt, at + "." + s.key, fmt.Errorf("must be a size from 1 byte to %s, such as 64KiB", humanize.IBytes(uint64(s.max)))
		}
		*s.out = int64(n)
	}
	for _, l := range []struct {
		key  string
		node *yaml.Node
		out  *[]proxy.Match
	}{{"success", &fr.Success, &rt.Success}, {"failure", &fr.Failure, &rt.Failure}} {
		ms, path, err := matchesConfig(l.node, at+"."+l.key)
		if err != nil {
			return rt, path, err
		}
		*l.out = ms
	}
	for _, r := range fr.StepUpPass {
		rt.StepUpPass = append(rt.StepUpPass, authguard.Reason(r))
	}
	if fr.StepUpPage != "" {
		t, err := stepUpPage(fr.StepUpPage)
		if err != nil {
			return rt, at + ".step_up_page", err
		}
		rt.StepUpPage = t
	}
	return rt, "", nil
}

// stepUpPage reads a route's step-up page (html/template), executed once
// with each StepUpPageData so that a page that cannot be served is a
// mistake in the file, not at the first step-up.
func stepUpPage(file string) (*template.Template, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	t, err := template.New("step-up").Parse(string(data))
	for _, breached := range []bool{false, true} {
		if err == nil {
			err = t.Execute(&bytes.Buffer{}, proxy.StepUpPageData{Breached: breached})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return t, nil
}

// matchesConfig reads a route's success or failure: one match (a mapping)
// or a list of them (any of which matches).
func matchesConfig(n *yaml.Node, at string) ([]proxy.Match, string, error) {
	var nodes []*yaml.Node
	switch n.Kind {
	case 0:
		return nil, "", nil
	case yaml.MappingNode:
		nodes = []*yaml.Node{n}
	case yaml.SequenceNode:
		nodes = n.Content
	default:
		return nil, at, errors.New("is a match (status, location, location_not, cookie, cookie_pattern, header, header_value, body_contains, json, json_value) or a list of them")
	}
	var out []proxy.Match
	for i, mn := range nodes {
		where := at
		if n.Kind == yaml.SequenceNode {
			where = at + "[" + strconv.Itoa(i) + "]"
		}
		if err := checkFileKeys(mn, reflect.TypeOf(fileMatch{}), where); err != nil {
			return nil, where, err
		}
		var fm fileMatch
		if err := mn.Decode(&fm); err != nil {
			return nil, where, decodeError(where, err)
		}
		m, path, err := matchConfig(&fm, where)
		if err != nil {
			return nil, path, err
		}
		out = append(out, m)
	}
	return out, "", nil
}

// matchConfig compiles one match.
func matchConfig(fm *fileMatch, at string) (proxy.Match, string, error) {
	m := proxy.Match{Status: fm.Status, Cookie: fm.Cookie, Header: fm.Header, BodyContains: fm.BodyContains, JSON: fm.JSON}
	for _, re := range []struct {
		key, v string
		out    **regexp.Regexp
	}{{"location", fm.Location, &m.Location}, {"location_not", fm.LocationNot, &m.LocationNot},
		{"cookie_pattern", fm.CookiePattern, &m.CookiePattern}, {"header_value", fm.HeaderValue, &m.HeaderValue}} {
		if re.v == "" {
			continue
		}
		c, err := regexp.Compile(re.v)
		if err != nil {
			return m, at + "." + re.key, fmt.Errorf("is not a regular expression (RE2): %v", err)
		}
		*re.out = c
	}
	if fm.JSONValue.Kind != 0 {
		var v any
		if err := fm.JSONValue.Decode(&v); err != nil {
			return m, at + ".json_value", decodeError(at+".json_value", err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return m, at + ".json_value", errors.New("is not a value JSON can hold")
		}
		m.JSONValue = string(b)
	}
	return m, "", nil
}

// routeFields are a proxy.Route's and Match's fields as the file names
// them.
var routeFields = map[string]string{
	"Name": "name", "Flow": "flow", "Mode": "mode", "Methods": "methods", "Path": "path", "Prefix": "prefix", "Body": "body",
	"Account": "account", "Password": "password", "Destination": "destination", "Channel": "channel", "ChannelField": "channel_field",
	"MaxBodyBytes": "max_body", "ResponseBodyBytes": "response_body", "Success": "success", "Failure": "failure",
	"Status": "status", "Location": "location", "LocationNot": "location_not", "Cookie": "cookie", "CookiePattern": "cookie_pattern",
	"Header": "header", "HeaderValue": "header_value", "BodyContains": "body_contains", "JSON": "json", "JSONValue": "json_value",
	"StepUpPage": "step_up_page", "StepUpLogout": "step_up_logout", "StepUpPass": "step_up_pass",
}

// routeErrorPath is the file's path of a *proxy.RouteError, and its
// message: "proxy.routes[admin].success[0].status", "must be ...".
func routeErrorPath(re *proxy.RouteError) (string, string) {
	at := "proxy.routes[" + strings.Trim(re.Route, "[]") + "]"
	// Field is "Path", "Methods[0]" or "Success[0].Status".
	for part := range strings.SplitSeq(re.Field, ".") {
		if part == "" {
			continue
		}
		name, idx, _ := strings.Cut(part, "[")
		k, ok := routeFields[name]
		if !ok {
			k = name
		}
		if idx != "" {
			k += "[" + idx
		}
		at += "." + k
	}
	return at, re.Err.Error()
}

// Warnings are what validate-config warns of in the proxy section: a
// route that can never classify an answer, and an insecure cookie on a
// listener that is not loopback.
func (p *Proxy) Warnings() []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, rt := range p.Routes {
		if p.sends[rt.Name] {
			continue
		}
		switch {
		case len(rt.Success) == 0 && len(rt.Failure) == 0:
			out = append(out, fmt.Sprintf("proxy route %s: no success and no failure: it can never classify an answer, so every attempt is "+
				"unknown, reports nothing and stays counted as a failure, and no owner ever gets a device cookie", rt.Name))
		case len(rt.Success) == 0:
			out = append(out, fmt.Sprintf("proxy route %s: no success: no answer is ever a success, so owners get no device cookie and "+
				"their logins stay counted as failures", rt.Name))
		}
	}
	if p.Cookie.Insecure {
		if err := CheckLoopback(p.Listen); err != nil {
			out = append(out, "proxy.device_cookie.insecure on a listener that is not loopback: the device cookie goes over plain HTTP "+
				"and without the __Host- prefix; it is for tests on loopback only")
		}
	}
	return out
}
