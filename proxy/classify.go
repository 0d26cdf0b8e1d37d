package proxy

import (
	"bytes"
	"net/http"
	"slices"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/tollgate-auth/tollgate/authguard"
)

// response is what a Match reads of the upstream's answer.
type response struct {
	status int
	header http.Header
	// body is the first ResponseBodyBytes of the body, content-decoded;
	// nil when the route reads no body.
	body []byte
	// now dates cookies' expiry.
	now time.Time

	parsed bool // doc has been parsed (or failed to)
	doc    any  // the body as JSON; docOK says whether it parsed
	docOK  bool
}

// Unknown is the outcome of an answer that matched neither a route's
// Success nor its Failure, or both: nothing is reported.
const Unknown authguard.Outcome = 0

// classify says how the upstream's answer ended the attempt: Success,
// Failure or Unknown.
func classify(rt *Route, r *response) authguard.Outcome {
	s, f := anyMatch(rt.Success, r), anyMatch(rt.Failure, r)
	switch {
	case s && !f:
		return authguard.Success
	case f && !s:
		return authguard.Failure
	}
	return Unknown
}

// anyMatch reports whether r matches one of ms.
func anyMatch(ms []Match, r *response) bool {
	for i := range ms {
		if ms[i].matches(r) {
			return true
		}
	}
	return false
}

// matches reports whether r meets every condition of m; a Match without
// one meets nothing.
func (m *Match) matches(r *response) bool {
	if m.empty() {
		return false
	}
	if len(m.Status) > 0 && !slices.Contains(m.Status, r.status) {
		return false
	}
	if m.Location != nil || m.LocationNot != nil {
		loc, ok := r.header["Location"]
		if m.Location != nil && (!ok || len(loc) == 0 || !m.Location.MatchString(loc[0])) {
			return false
		}
		if m.LocationNot != nil && ok && len(loc) > 0 && m.LocationNot.MatchString(loc[0]) {
			return false
		}
	}
	if (m.Cookie != "" || m.CookiePattern != nil) && !r.setsCookie(m.Cookie, m) {
		return false
	}
	if m.Header != "" {
		vs := r.header.Values(m.Header)
		if len(vs) == 0 {
			return false
		}
		if m.HeaderValue != nil && !slices.ContainsFunc(vs, m.HeaderValue.MatchString) {
			return false
		}
	}
	if m.BodyContains != "" && !bytes.Contains(r.body, []byte(m.BodyContains)) {
		return false
	}
	if m.JSON != "" && !r.jsonHas(m.JSON, m.JSONValue) {
		return false
	}
	return true
}

// setsCookie reports whether the response sets, and does not delete, a
// cookie named name (or, with name "", one whose name m.CookiePattern
// matches, as well as name when both are given).
func (r *response) setsCookie(name string, m *Match) bool {
	for _, line := range r.header["Set-Cookie"] {
		c, err := http.ParseSetCookie(line)
		if err != nil {
			continue
		}
		if name != "" && c.Name != name {
			continue
		}
		if m.CookiePattern != nil && !m.CookiePattern.MatchString(c.Name) {
			continue
		}
		// Max-Age=0 (MaxAge < 0 here) or an Expires in the past deletes
		// the cookie: what an upstream sends on a failed login.
		if c.Value == "" || c.MaxAge < 0 || !c.Expires.IsZero() && !c.Expires.After(r.now) {
			continue
		}
		return true
	}
	return false
}

// jsonHas reports whether the body is one JSON value in which pointer
// finds a value: any value when want is "", else one equal to want.
func (r *response) jsonHas(pointer, want string) bool {
	if !r.parsed {
		r.parsed = true
		r.docOK = json.Unmarshal(r.body, &r.doc) == nil
	}
	if !r.docOK {
		return false
	}
	tokens, err := parsePointer(pointer)
	if err != nil {
		return false
	}
	v, ok := lookup(r.doc, tokens)
	if !ok {
		return false
	}
	if want == "" {
		return true
	}
	got, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return false
	}
	w, err := canonicalJSON([]byte(want))
	return err == nil && bytes.Equal(got, w)
}
