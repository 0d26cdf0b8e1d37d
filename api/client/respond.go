package client

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// ResponderConfig configures a Responder. Every field is the same for every
// end user: nothing in it can depend on the account or on why a verdict was
// given.
type ResponderConfig struct {
	// Policy names the quota policy in the RateLimit field of a delay: use
	// the flow's name. It must be 1 to 64 printable ASCII characters (an
	// RFC 9651 String). The default is "login".
	Policy string
	// ProblemType is the type URI of the problem documents Respond writes,
	// an absolute URI. The default is "about:blank", which RFC 9457 §4.2.1
	// pairs with the status phrase as title: set both or neither.
	ProblemType string
	// Title is the title of those problem documents, the same for every
	// answer. The default is the answer's status phrase, as about:blank
	// asks: "Too Many Requests", or "Forbidden" for a step_up's 403.
	Title string
	// Captcha writes the answer to a captcha verdict: your page or JSON
	// that shows a CAPTCHA and, once your CAPTCHA provider confirms it,
	// lets the end user try again (the next check says captcha_solved). It
	// gets the request but never the verdict, so it cannot tell end users
	// apart by the rule that asked for the CAPTCHA; it must not tell them
	// apart by anything else in the request either (the account least of
	// all). Set it whenever a flow can answer captcha, as the built-in
	// login does. The default writes a 429 problem document that asks for a
	// CAPTCHA, without Retry-After: waiting does not lift it.
	Captcha http.Handler
	// Accepted writes a send flow's answer once a code is on its way, such
	// as "if this number can receive codes, one is on its way", with a 2xx
	// status (202 Accepted says it best: the code is queued, not
	// delivered). Respond serves it for deny, and the caller serves it
	// through Accept after sending a code, so a refused send and a sent one
	// get the same status and bytes. It must write the same for every end
	// user. The default writes 202 Accepted with an empty body.
	Accepted http.Handler
	// Delay writes the answer to a delay verdict: your page saying how long
	// to wait. Respond calls it with the wait in whole seconds (at least 1)
	// once it has set Retry-After, RateLimit and Cache-Control: no-store on
	// w; Delay writes the status, 429 Too Many Requests, and the body. Like
	// Captcha it gets the request but never the verdict, and it must not
	// tell end users apart by anything in the request: the wait is all an
	// answer may depend on. The default writes an RFC 9457 problem document
	// whose detail says how many seconds to wait.
	Delay func(w http.ResponseWriter, r *http.Request, seconds int)
	// StepUp writes the answer to a step_up verdict: your page that asks
	// for a second factor, with its status (403 says it best: the
	// password alone does not sign in). Respond sets Cache-Control:
	// no-store first. Like Captcha it never gets the verdict. The default
	// writes a 403 problem document saying a second factor is needed.
	StepUp http.Handler
}

// Responder turns tollgate's verdicts into the HTTP answers end users get. It
// sees only a verdict's action, delay_ms and retry_after, never its reasons,
// tokens or the account: two end users with the same verdict get the same
// bytes, so an answer never tells an unknown account from a wrong password.
// The zero Responder answers with every default; a Responder is safe for
// concurrent use.
type Responder struct {
	policy      string // the RateLimit item: Policy as an RFC 9651 String
	problemType string
	title       string
	captcha     http.Handler
	accepted    http.Handler
	delay       func(http.ResponseWriter, *http.Request, int)
	stepUp      http.Handler
}

// RespondResult says what Respond did.
type RespondResult struct {
	// Proceed is true when the caller goes ahead: checks the credential, or
	// sends the code, after Hold. Respond then wrote nothing. When Proceed
	// is false Respond wrote the whole answer; write nothing more.
	Proceed bool
	// StepUp is true for a step_up verdict (a success report's, once the
	// password was verified): the end user is not signed in yet. Respond
	// wrote ResponderConfig.StepUp's page (or a 403 problem document); ask
	// for the second factor there (or a password reset), report its
	// outcome with Client.ReportStepUp, and sign in only once that report
	// proceeds. Proceed is false with it, so a caller that reads Proceed
	// alone never signs in on a step_up. A Guard serves its own second
	// factor instead (GuardConfig.StepUp).
	StepUp bool
	// Hold is, with Proceed, how long to hold the call before going ahead
	// without checking again: a queued call's place in its queue (a proceed
	// with delay_ms). Hold it with a timer that gives up when the request's
	// context ends. Zero otherwise. On a send flow with a leaky_bucket rule
	// (the only rule that queues), a held proceed answers later than a deny,
	// which Respond answers at once: hold a deny as long, or keep queues off
	// send flows, if the end user must not tell them apart by time.
	Hold time.Duration
}

// The defaults of ResponderConfig.
const (
	defaultPolicy      = "login"
	defaultProblemType = "about:blank"
	defaultTitle       = "Too Many Requests" // a 429's status phrase
)

// maxDelaySeconds caps Retry-After and the RateLimit field's t: 2^31, the
// value RFC 9111 §1.2.2 has recipients assume for anything larger. No policy
// comes near it.
const maxDelaySeconds = 1 << 31

// NewResponder returns a Responder with cfg's answers, or an error naming
// the field that cannot be sent as configured.
func NewResponder(cfg ResponderConfig) (*Responder, error) {
	rs := &Responder{captcha: cfg.Captcha, accepted: cfg.Accepted, delay: cfg.Delay, stepUp: cfg.StepUp}
	if cfg.Policy != "" {
		if len(cfg.Policy) > 64 || !printableASCII(cfg.Policy) {
			return nil, errors.New("client: responder: Policy must be 1 to 64 printable ASCII characters")
		}
		rs.policy = sfString(cfg.Policy)
	}
	if cfg.ProblemType != "" {
		u, err := url.Parse(cfg.ProblemType)
		if err != nil || !u.IsAbs() || !printableASCII(cfg.ProblemType) || strings.ContainsAny(cfg.ProblemType, " \"<>\\^`{|}") {
			return nil, errors.New("client: responder: ProblemType must be an absolute URI")
		}
		rs.problemType = cfg.ProblemType
	}
	rs.title = cfg.Title
	return rs, nil
}

// Respond answers the end user for verdict v and says whether to go ahead:
//
//   - proceed: writes nothing and returns Proceed, with Hold for a queued
//     call (delay_ms > 0).
//   - delay: 429 Too Many Requests with Retry-After in whole seconds, at
//     least 1 (RFC 9110 §10.2.3), a RateLimit field (below), Cache-Control:
//     no-store and an RFC 9457 application/problem+json body whose detail
//     says only how many seconds to wait; with ResponderConfig.Delay, the
//     same fields and Delay's status and body.
//   - captcha: serves ResponderConfig.Captcha.
//   - deny: serves Accept, the answer a sent code gets. Only send flows
//     answer deny; what the end user sees must not reveal it.
//   - step_up (a success report's): serves ResponderConfig.StepUp, or
//     writes a 403 problem document saying a second factor is needed, and
//     returns StepUp, never Proceed: the password was right, but a second
//     factor comes before the session.
//   - anything else, such as a zero Verdict: answered as a delay of
//     retry_after (at least a second), never as proceed.
//
// The RateLimit field follows draft-ietf-httpapi-ratelimit-headers-10
// (September 2025; drafts -08, -09 and -11 of May 2026 have the same
// structured-field syntax, -11 rewording r as the quota available and t as
// the window it holds for; -12 was not read):
// `RateLimit: "<Policy>";r=0;t=<seconds>`, with r=0 (nothing may be
// attempted now) and t equal to Retry-After (when the next attempt may go
// ahead, which the draft asks Retry-After never to undercut). tollgate tells
// its caller no quotas, and one verdict can combine several rules, so
// Respond sends no RateLimit-Policy field: its q (the quota) is required
// and there is none to fill in honestly. For a 2.5 s delay (delay_ms 2500,
// retry_after 3) with the defaults:
//
//	HTTP/1.1 429 Too Many Requests
//	Cache-Control: no-store
//	Content-Length: 99
//	Content-Type: application/problem+json
//	Ratelimit: "login";r=0;t=3
//	Retry-After: 3
//
//	{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Try again in 3 seconds."}
//
// (Go writes the field name as "Ratelimit"; field names are case-insensitive
// and HTTP/2 sends them in lower case.) Respond reads nothing of v but its
// action, delay_ms and retry_after, and nothing of r; only the Captcha and
// Accepted handlers see r. A Client call returns a Verdict that holds the
// wire.Verdict (v.Verdict); a fallback is answered like tollgate's own.
//
// Security: the answers are identical for every end user with the same
// verdict, but their timing is the caller's: a deny answered at once while
// a proceed waits for an SMS gateway tells them apart, so queue sends and
// answer before the gateway does.
func (rs *Responder) Respond(w http.ResponseWriter, r *http.Request, v wire.Verdict) RespondResult {
	switch v.Action {
	case wire.ActionProceed:
		return RespondResult{Proceed: true, Hold: holdOf(v.DelayMS)}
	case wire.ActionCaptcha:
		if rs != nil && rs.captcha != nil {
			rs.captcha.ServeHTTP(w, r)
		} else {
			rs.writeProblem(w, http.StatusTooManyRequests, "Complete a CAPTCHA to continue.", nil)
		}
	case wire.ActionDeny:
		rs.Accept(w, r)
	case wire.ActionStepUp:
		if rs != nil && rs.stepUp != nil {
			w.Header().Set("Cache-Control", "no-store")
			rs.stepUp.ServeHTTP(w, r)
		} else {
			rs.writeProblem(w, http.StatusForbidden, "Confirm it is you with a second factor to finish signing in.", nil)
		}
		return RespondResult{StepUp: true}
	default: // delay, and any action this client does not know: fail closed
		wait := retryAfterOf(v)
		secs := strconv.FormatInt(wait, 10)
		limitHeaders := func(h http.Header) {
			h.Set("Retry-After", secs)
			h.Set("RateLimit", rs.policyItem()+";r=0;t="+secs)
		}
		if rs != nil && rs.delay != nil {
			h := w.Header()
			limitHeaders(h)
			h.Set("Cache-Control", "no-store")
			rs.delay(w, r, int(min(wait, 1<<31-1))) // an int even where int has 32 bits
			break
		}
		unit := " seconds."
		if secs == "1" {
			unit = " second."
		}
		rs.writeProblem(w, http.StatusTooManyRequests, "Try again in "+secs+unit, limitHeaders)
	}
	return RespondResult{}
}

// Accept writes the answer of a send flow once a code is on its way:
// ResponderConfig.Accepted, or by default 202 Accepted with an empty body and
// Cache-Control: no-store. Call it after sending a code; Respond calls it
// for deny, so both answers are the same bytes.
func (rs *Responder) Accept(w http.ResponseWriter, r *http.Request) {
	if rs != nil && rs.accepted != nil {
		rs.accepted.ServeHTTP(w, r)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusAccepted)
}

// problemDoc is the RFC 9457 document Respond writes, in wire order.
type problemDoc struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// writeProblem writes a problem document with status and detail; extra, if
// not nil, adds headers first. Without a configured title the title is
// status's phrase: RFC 9457 §4.2.1 has about:blank's title be the status
// phrase, so a step_up's 403 must not say "Too Many Requests".
func (rs *Responder) writeProblem(w http.ResponseWriter, status int, detail string, extra func(http.Header)) {
	typ, title := defaultProblemType, http.StatusText(status)
	if rs != nil && rs.problemType != "" {
		typ = rs.problemType
	}
	if rs != nil && rs.title != "" {
		title = rs.title
	}
	body, err := json.Marshal(problemDoc{Type: typ, Title: title, Status: status, Detail: detail})
	if err != nil { // strings and an int: cannot fail
		panic("client: encoding a problem: " + err.Error())
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	if extra != nil {
		extra(h)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// policyItem is the RateLimit field's policy item.
func (rs *Responder) policyItem() string {
	if rs == nil || rs.policy == "" {
		return sfString(defaultPolicy)
	}
	return rs.policy
}

// retryAfterOf is v's delay in whole seconds, rounded up: the larger of
// retry_after and delay_ms, at least 1 and at most maxDelaySeconds.
func retryAfterOf(v wire.Verdict) int64 {
	secs := v.RetryAfter
	if ms := v.DelayMS; ms > 0 {
		s := ms / 1000
		if ms%1000 != 0 {
			s++
		}
		secs = max(secs, s)
	}
	return min(max(secs, 1), maxDelaySeconds)
}

// holdOf is a proceed's delay_ms as a duration, zero when not positive.
func holdOf(ms int64) time.Duration {
	if ms <= 0 {
		return 0
	}
	return time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
}

// printableASCII reports whether s is non-empty and only %x20-7E.
func printableASCII(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// sfString serialises printable ASCII s as an RFC 9651 String.
func sfString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}
