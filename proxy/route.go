package proxy

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-auth/tollgate/authguard"
)

// Mode says whether a route's verdicts are enforced.
type Mode uint8

// The modes. On the wire they are "enforce" and "shadow".
const (
	// Enforce answers the end user by the verdict: a delay or a challenge
	// never reaches the upstream.
	Enforce Mode = iota
	// Shadow forwards every request, whatever the verdict, and records what
	// enforcing would have done (the engine's decision log line, the
	// metrics, a log line), so that an operator can check the route's
	// classification on real traffic before enforcing it.
	Shadow
)

func (m Mode) String() string {
	switch m {
	case Enforce:
		return "enforce"
	case Shadow:
		return "shadow"
	}
	return "unknown"
}

// ParseMode parses "enforce" or "shadow".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "enforce":
		return Enforce, nil
	case "shadow":
		return Shadow, nil
	}
	return 0, fmt.Errorf("%q is not enforce or shadow", s)
}

// BodyFormat is how a route's request body is read.
type BodyFormat uint8

// The body formats. On the wire they are "form" and "json".
const (
	// Form reads the fields of the query string and of a body sent as
	// application/x-www-form-urlencoded or multipart/form-data (its parts
	// without a file name), as PHP's $_REQUEST and Django's request.POST
	// see them. A body of any other content type is not read: the fields
	// come from the query string alone, and the body streams to the
	// upstream untouched.
	Form BodyFormat = iota
	// JSON reads a JSON body's fields by JSON pointer (RFC 6901).
	JSON
)

func (f BodyFormat) String() string {
	switch f {
	case Form:
		return "form"
	case JSON:
		return "json"
	}
	return "unknown"
}

// ParseBodyFormat parses "form" or "json".
func ParseBodyFormat(s string) (BodyFormat, error) {
	switch s {
	case "form":
		return Form, nil
	case "json":
		return JSON, nil
	}
	return 0, fmt.Errorf("%q is not form or json", s)
}

// The bounds of a route's body sizes.
const (
	// DefaultMaxBodyBytes is Route.MaxBodyBytes's default.
	DefaultMaxBodyBytes = 64 << 10
	// MaxMaxBodyBytes is the most Route.MaxBodyBytes may be.
	MaxMaxBodyBytes = 64 << 20
	// DefaultResponseBodyBytes is Route.ResponseBodyBytes's default.
	DefaultResponseBodyBytes = 64 << 10
	// MaxResponseBodyBytes is the most Route.ResponseBodyBytes may be.
	MaxResponseBodyBytes = 1 << 20
)

// Route is one login (or one-time-code) endpoint of the upstream that the
// proxy inspects. Requests that match no route pass through untouched.
type Route struct {
	// Name names the route in metrics and logs: 1 to 64 lower-case
	// letters, digits, '-' and '_', starting with a letter or digit.
	// Required.
	Name string
	// Flow is the policy's flow the route's requests are checked in: a
	// flow of checks and reports (login, otp_verify, or one of the
	// policy's own), or a send flow (otp_send), whose requests are sends.
	// Required.
	Flow string
	// Mode is Enforce or Shadow. The default is Enforce.
	Mode Mode
	// Methods are the methods inspected, compared case-insensitively. The
	// default is POST only.
	Methods []string
	// Path is the request path inspected, compared case-insensitively,
	// with empty segments, dot segments, ";" parameters and a trailing
	// slash ignored (so that no spelling the upstream routes to the same
	// view escapes the route). Required, starting with "/".
	Path string
	// Prefix, when true, inspects every path under Path too. The default
	// is false: Path exactly.
	Prefix bool
	// Body is how the request's fields are read: Form or JSON. The
	// default is Form.
	Body BodyFormat
	// Account is the field holding the account as typed: a form field's
	// name, or a JSON pointer ("/username"). Required on a flow of checks;
	// optional on a send flow.
	Account string
	// Password is the field holding the password, or "" for none. It is
	// fingerprinted in the process (an HMAC under a key derived from the
	// server's secret) for the policy's password rules, and never stored,
	// logged or written to a page. The default is "".
	Password string
	// Destination is the field holding the phone number or e-mail address
	// a code goes to: required on a send flow; on a flow that verifies a
	// send flow's codes, optional, and then Channel or ChannelField too.
	// The default is "".
	Destination string
	// Channel is the channel of every request of the route ("sms",
	// "voice", "whatsapp" or "email"), or "" to read ChannelField. The
	// default is "".
	Channel string
	// ChannelField is the field holding the channel, when Channel is "".
	// The default is "".
	ChannelField string
	// RefuseWithoutAccount, when true, answers a request of the route that
	// carries no account (no Account field, or an empty one; no
	// Destination on a send flow) with 400 instead of forwarding it
	// uninspected. Leave it false where such requests are ordinary (a
	// route on a page that also serves views without a login) and the
	// upstream checks no credential without the field. The default is
	// false.
	RefuseWithoutAccount bool
	// MaxBodyBytes bounds the request body read (a JSON route's, a form
	// route's form): a larger one is answered 413 and never reaches the
	// upstream. A submission held across a challenge is also bounded by
	// the challenge's own limit (challenge.Config.MaxBodyBytes, 64 KiB by
	// default); past it a captcha verdict is answered 503. At most
	// MaxMaxBodyBytes. The default is DefaultMaxBodyBytes (64 KiB).
	MaxBodyBytes int64
	// Success and Failure say what the upstream's answer looks like when
	// the credential was right, and wrong: a response matches a list when
	// it matches any of its Matches. An answer that matches neither list,
	// or both, is unknown: nothing is reported, so the check's charge
	// stays (the engine counts an attempt never reported as a failure),
	// and it is counted in tollgate_proxy_outcomes_total. Send routes are
	// not classified. The default is empty lists: every answer is unknown.
	Success, Failure []Match
	// ResponseBodyBytes is how much of the upstream's response body a
	// Match's BodyContains and JSON read. At most MaxResponseBodyBytes.
	// The default is DefaultResponseBodyBytes (64 KiB).
	ResponseBodyBytes int64
	// StepUpPage, when set, is the page a form route answers (403) in
	// place of the upstream's answer to a success the engine answered
	// step_up: a correct password the policy will not let sign in without
	// a second factor (a breached password, an account or address under
	// attack), which the proxy cannot ask for. It is executed with a
	// StepUpPageData, and may depend on nothing else. The upstream's
	// answer, its Set-Cookie and so the session it started, never reach
	// the end user. A JSON route answers a problem document (ProblemStepUp)
	// instead. The default is nil: a plain built-in page.
	StepUpPage *template.Template
	// StepUpLogout, when set, is the upstream's logout path (GET, such as
	// Django 3.2's "/admin/logout/"): after holding back a stepped-up
	// success, the proxy sends it the session cookies the held answer set,
	// so that the upstream ends the session it started instead of keeping
	// it, undelivered, until it expires. Its answer is read and dropped;
	// a logout that fails is logged and changes nothing for the end user.
	// A logout that takes POST and a CSRF token (Django 5) cannot be sent
	// this way. The default is "": no logout.
	StepUpLogout string
	// StepUpPass lists the step-up reasons the route lets through: a
	// success the engine answered step_up for these reasons alone is
	// delivered as the upstream answered it (without a device cookie,
	// which the verdict does not carry), since the proxy cannot ask for
	// the second factor that would let the end user in. A step_up with any
	// other reason is held. "address_escalated" lets a user who shares an
	// address with a sprayer, and solved its CAPTCHA, sign in; without it
	// she cannot from that address until it cools down. The reasons are
	// breached_password, account_under_attack, new_device_under_attack and
	// address_escalated. The default is none: every step_up is held.
	StepUpPass []authguard.Reason
}

// stepUpReasons are the reasons a step_up verdict gives.
var stepUpReasons = []authguard.Reason{authguard.ReasonBreachedPassword, authguard.ReasonAccountUnderAttack,
	authguard.ReasonNewDeviceUnderAttack, authguard.ReasonAddressEscalated}

// Match is what a response must look like: every condition set must hold.
// A zero Match holds for nothing.
type Match struct {
	// Status lists the status codes that match; empty: any. The default is
	// empty.
	Status []int
	// Location, when set, must match the Location header (which must be
	// present). The default is nil.
	Location *regexp.Regexp
	// LocationNot, when set, must not match the Location header (an absent
	// header matches nothing, so it holds). The default is nil.
	LocationNot *regexp.Regexp
	// Cookie, when set, is the name of a cookie the response must set: a
	// Set-Cookie with that name, a non-empty value, and neither Max-Age
	// nor Expires deleting it. The default is "".
	Cookie string
	// CookiePattern, when set, is the same for any cookie whose name it
	// matches (DokuWiki names its cookie after a hash of its path). The
	// default is nil.
	CookiePattern *regexp.Regexp
	// Header, when set, is a response header that must be present; with
	// HeaderValue, one of its values must match. The default is "".
	Header string
	// HeaderValue is what Header's value must match. The default is nil:
	// any value.
	HeaderValue *regexp.Regexp
	// BodyContains, when set, must occur in the first ResponseBodyBytes of
	// the body (after content decoding). The default is "".
	BodyContains string
	// JSON, when set, is a JSON pointer into the body (which must be one
	// JSON value within ResponseBodyBytes) whose value must be present;
	// with JSONValue, equal to it. The default is "".
	JSON string
	// JSONValue is the JSON text of the value JSON must point to ("true",
	// "\"ok\"", "1"), compared as JSON values. The default is "": any
	// value.
	JSONValue string
}

// empty reports whether m has no condition.
func (m *Match) empty() bool {
	return len(m.Status) == 0 && m.Location == nil && m.LocationNot == nil && m.Cookie == "" && m.CookiePattern == nil &&
		m.Header == "" && m.HeaderValue == nil && m.BodyContains == "" && m.JSON == "" && m.JSONValue == ""
}

// readsBody reports whether m reads the response body.
func (m *Match) readsBody() bool { return m.BodyContains != "" || m.JSON != "" }

// RouteError is a route that cannot be served: Field (a Route field's
// name, such as "Path" or "Success[0].Status") says where, Err what.
type RouteError struct {
	Route string
	Field string
	Err   error
}

func (e *RouteError) Error() string {
	if e.Field == "" {
		return "proxy: route " + e.Route + ": " + e.Err.Error()
	}
	return "proxy: route " + e.Route + ": " + e.Field + ": " + e.Err.Error()
}

func (e *RouteError) Unwrap() error { return e.Err }

var routeNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// channels are the send channels a route may name.
var channels = []string{"sms", "voice", "whatsapp", "email"}

// CheckRoutes checks routes against policy, the policy their flows are
// in, as New does: the first mistake is a *RouteError.
func CheckRoutes(routes []Route, policy *authguard.Policy) error {
	seen := map[string]bool{}
	for i := range routes {
		rt := &routes[i]
		name := rt.Name
		if name == "" {
			name = "[" + strconv.Itoa(i) + "]"
		}
		fail := func(field string, err error) error { return &RouteError{Route: name, Field: field, Err: err} }
		if !routeNameRE.MatchString(rt.Name) {
			return fail("Name", errors.New("must be 1 to 64 lower-case letters, digits, '-' or '_', starting with a letter or digit"))
		}
		if seen[rt.Name] {
			return fail("Name", errors.New("names two routes"))
		}
		seen[rt.Name] = true
		if err := checkRoute(rt, policy); err != nil {
			var re *RouteError
			if errors.As(err, &re) {
				re.Route = name
			}
			return err
		}
	}
	return nil
}

// checkRoute checks one route; its *RouteError has no Route yet.
func checkRoute(rt *Route, policy *authguard.Policy) error {
	fail := func(field, format string, args ...any) error {
		return &RouteError{Field: field, Err: fmt.Errorf(format, args...)}
	}
	if rt.Mode != Enforce && rt.Mode != Shadow {
		return fail("Mode", "must be enforce or shadow")
	}
	var f *authguard.Flow
	if policy != nil {
		f = policy.Flow(rt.Flow)
	}
	if f == nil {
		var names []string
		if policy != nil {
			names = policy.FlowNames()
		}
		return fail("Flow", "%q is not a flow of the policy (%s)", rt.Flow, strings.Join(names, ", "))
	}
	if !strings.HasPrefix(rt.Path, "/") {
		return fail("Path", "must start with /")
	}
	if strings.ContainsAny(rt.Path, "?#") {
		return fail("Path", "is a path without query or fragment")
	}
	for i, m := range rt.Methods {
		if !validToken(m) {
			return fail("Methods["+strconv.Itoa(i)+"]", "%q is not an HTTP method", m)
		}
	}
	if rt.Body != Form && rt.Body != JSON {
		return fail("Body", "must be form or json")
	}
	for _, fd := range []struct{ name, v string }{{"Account", rt.Account}, {"Password", rt.Password},
		{"Destination", rt.Destination}, {"ChannelField", rt.ChannelField}} {
		if fd.v == "" {
			continue
		}
		if rt.Body == JSON {
			if _, err := parsePointer(fd.v); err != nil {
				return fail(fd.name, "%v", err)
			}
		} else if strings.ContainsAny(fd.v, "\x00\r\n") {
			return fail(fd.name, "is a form field's name")
		}
	}
	if rt.Channel != "" && !slices.Contains(channels, rt.Channel) {
		return fail("Channel", "%q is not a channel (%s)", rt.Channel, strings.Join(channels, ", "))
	}
	if rt.Channel != "" && rt.ChannelField != "" {
		return fail("Channel", "give channel or channel_field, not both")
	}
	if f.Kind == authguard.Sends {
		if rt.Destination == "" {
			return fail("Destination", "is required on a send flow's route")
		}
		if rt.Channel == "" && rt.ChannelField == "" {
			return fail("Channel", "a send flow's route needs channel or channel_field")
		}
		if len(rt.Success) > 0 || len(rt.Failure) > 0 {
			return fail("Success", "a send flow has no report, so its route classifies nothing")
		}
		if rt.Password != "" {
			return fail("Password", "a send flow takes no password")
		}
		if rt.StepUpPage != nil || rt.StepUpLogout != "" || len(rt.StepUpPass) > 0 {
			return fail("StepUpPage", "a send flow has no report, so nothing is stepped up")
		}
	} else {
		if rt.Account == "" {
			return fail("Account", "is required on a flow of checks")
		}
		if rt.Destination != "" && f.Verifies == "" {
			return fail("Destination", "flow %s verifies no send flow's codes, so it takes no destination", f.Name)
		}
		if rt.Destination != "" && rt.Channel == "" && rt.ChannelField == "" {
			return fail("Channel", "a destination needs channel or channel_field")
		}
		if rt.StepUpPage != nil && rt.Body == JSON {
			return fail("StepUpPage", "a JSON route answers a step-up with a problem document, not a page")
		}
		if rt.StepUpLogout != "" && (!strings.HasPrefix(rt.StepUpLogout, "/") || strings.ContainsAny(rt.StepUpLogout, "?#")) {
			return fail("StepUpLogout", "must be a path starting with /, without query or fragment")
		}
		for i, r := range rt.StepUpPass {
			if !slices.Contains(stepUpReasons, r) {
				names := make([]string, len(stepUpReasons))
				for i, r := range stepUpReasons {
					names[i] = string(r)
				}
				return fail("StepUpPass["+strconv.Itoa(i)+"]", "%q is not a step-up reason (%s)", r, strings.Join(names, ", "))
			}
		}
	}
	if rt.MaxBodyBytes < 0 || rt.MaxBodyBytes > MaxMaxBodyBytes {
		return fail("MaxBodyBytes", "must be between 0 (the default, 64 KiB) and 64 MiB")
	}
	if rt.ResponseBodyBytes < 0 || rt.ResponseBodyBytes > MaxResponseBodyBytes {
		return fail("ResponseBodyBytes", "must be between 0 (the default, 64 KiB) and 1 MiB")
	}
	for _, list := range []struct {
		name string
		ms   []Match
	}{{"Success", rt.Success}, {"Failure", rt.Failure}} {
		for i := range list.ms {
			if err := checkMatch(&list.ms[i]); err != nil {
				var re *RouteError
				errors.As(err, &re)
				re.Field = list.name + "[" + strconv.Itoa(i) + "]." + re.Field
				return re
			}
		}
	}
	return nil
}

// checkMatch checks one Match; its *RouteError names a Match field.
func checkMatch(m *Match) error {
	fail := func(field, msg string) error { return &RouteError{Field: field, Err: errors.New(msg)} }
	if m.empty() {
		return fail("", "says nothing: give status, location, location_not, cookie, cookie_pattern, header, body_contains or json")
	}
	for _, s := range m.Status {
		if s < 100 || s > 599 {
			return fail("Status", "must be HTTP status codes, 100 to 599")
		}
	}
	if m.Header != "" && !validToken(m.Header) {
		return fail("Header", "is not a header name")
	}
	if m.HeaderValue != nil && m.Header == "" {
		return fail("HeaderValue", "needs header")
	}
	if m.Cookie != "" && !validToken(m.Cookie) {
		return fail("Cookie", "is not a cookie name")
	}
	if m.JSON != "" {
		if _, err := parsePointer(m.JSON); err != nil {
			return fail("JSON", err.Error())
		}
	}
	if m.JSONValue != "" {
		if m.JSON == "" {
			return fail("JSONValue", "needs json (the pointer)")
		}
		if _, err := canonicalJSON([]byte(m.JSONValue)); err != nil {
			return fail("JSONValue", "is not one JSON value")
		}
	}
	return nil
}

// validToken reports whether s is an RFC 9110 token.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// matchPath reports whether the request path p is the route's path
// (prefix false) or under it. Both sides are compared without their
// trailing slash and case-insensitively; a p with empty or dot segments or
// ";" parameters is compared cleaned (cleanPath). It allocates only for
// such a p.
func matchPath(p, path string, prefix bool) bool {
	if needsClean(p) {
		p = cleanPath(p)
	}
	p, path = trimSlash(p), trimSlash(path)
	if !prefix {
		return strings.EqualFold(p, path)
	}
	if len(p) < len(path) || !strings.EqualFold(p[:len(path)], path) {
		return false
	}
	return len(p) == len(path) || path == "" || p[len(path)] == '/'
}

// trimSlash drops one trailing slash, so that "/" is "".
func trimSlash(s string) string { return strings.TrimSuffix(s, "/") }

// needsClean reports whether p has an empty segment, a dot segment or a
// ";" parameter.
func needsClean(p string) bool {
	return strings.Contains(p, "//") || strings.Contains(p, "/.") || strings.IndexByte(p, ';') >= 0 || !strings.HasPrefix(p, "/")
}

// cleanPath is p with empty segments dropped, each segment's ";"
// parameters dropped, "." segments dropped and ".." segments resolved (never
// above the root), and a trailing slash kept: what servlet containers,
// PHP's and Django's routing make of a path before choosing a view.
func cleanPath(p string) string {
	var segs []string
	for seg := range strings.SplitSeq(p, "/") {
		if i := strings.IndexByte(seg, ';'); i >= 0 {
			seg = seg[:i]
		}
		switch seg {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, seg)
		}
	}
	out := "/" + strings.Join(segs, "/")
	if strings.HasSuffix(p, "/") && len(segs) > 0 {
		out += "/"
	}
	return out
}

// matchMethod reports whether m is one of the route's methods (POST when
// it lists none).
func matchMethod(m string, methods []string) bool {
	if len(methods) == 0 {
		return strings.EqualFold(m, http.MethodPost)
	}
	for _, x := range methods {
		if strings.EqualFold(m, x) {
			return true
		}
	}
	return false
}
