package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// DefaultTimeout bounds each call unless Config.Timeout says otherwise.
//
// tollgate sits on the login path: every credential check waits for it. It
// answers in a few milliseconds (p99 under 20 ms under load, about 60 ms
// while its Redis stalls and it answers from its fallback), so 250 ms leaves
// room for that, a network round trip and a fresh TLS connection, while
// capping what a dead or drowning tollgate adds to each login: past it the
// call site's FailMode answers, and the end user barely notices.
const DefaultTimeout = 250 * time.Millisecond

// DefaultUserAgent is the User-Agent header unless Config.UserAgent says
// otherwise.
const DefaultUserAgent = "tollgate-go-client/1"

// maxResponseBytes caps what is read of an answer; a verdict is under 3 KiB
// and an explanation of a large policy well under this.
const maxResponseBytes = 1 << 20

// maxProblemBytes caps what is read of an error answer.
const maxProblemBytes = 64 << 10

// Config configures a Client.
type Config struct {
	// BaseURL is where tollgate listens, such as "http://127.0.0.1:8080" or
	// "https://tollgate.internal/prefix": http or https, with a host and no
	// user info, query or fragment. It is required.
	BaseURL string
	// Token is a bearer token sent with every call, for a tollgate with
	// auth configured (scope verdicts, and admin:read or admin:write for
	// Explain and Reset). Set Token or TokenSource, not both. The default
	// is none: no Authorization header.
	Token string
	// TokenSource, when set, is asked for the bearer token of every call,
	// with the call's context, so it runs within the call's Timeout: it
	// should hand out a cached token and refresh it ahead of expiry. An
	// error fails the call as ErrUnavailable (tollgate could not be asked);
	// an empty token sends no Authorization header. The default is nil.
	TokenSource func(ctx context.Context) (string, error)
	// HTTPClient sends the calls. Its own timeout, redirects and proxy
	// settings apply as they are. The default is the Client's own: it
	// reuses connections (up to 64 idle, at most 256 per host), uses no
	// proxy from the environment (the bodies hold end users' identifiers),
	// follows no redirect and asks for no compression.
	HTTPClient *http.Client
	// Timeout bounds each call, token source included: past it the call
	// fails with ErrTimeout. A shorter deadline on the call's context wins;
	// a negative Timeout leaves the context alone to bound calls. The
	// default is DefaultTimeout (250ms).
	Timeout time.Duration
	// UserAgent is sent as the User-Agent header. The default is
	// DefaultUserAgent.
	UserAgent string
	// BreachedTimeout bounds each Breached call, token source included, in
	// place of Timeout: a range answer is larger than a verdict and may
	// come from tollgate's upstream. A shorter deadline on the call's
	// context wins; a negative value leaves the context alone to bound it.
	// The default is DefaultBreachedTimeout (1s).
	BreachedTimeout time.Duration

	// FailOpenPerAccount bounds FailOpen while tollgate gives no verdict:
	// each account of a check's flow (and each destination of a send's)
	// gets this many fallback proceeds at once, and they come back evenly
	// over FailOpenWindow. Past them the call is answered as FailDelay
	// would, with ReasonFallbackAllowance; a fallback never proceeds
	// unbounded. The account is counted whatever address it comes from,
	// so an attacker who rotates addresses during an outage gets no more
	// guesses on it; the other side of that is that its owner, counted
	// with the attacker, may find it spent (device tokens are not
	// honoured: the client cannot verify them, and an attacker could make
	// them up). The DefaultFailOpen constants' comment argues the
	// defaults. A negative value turns this limit off. The default is
	// DefaultFailOpenPerAccount (5).
	FailOpenPerAccount int
	// FailOpenPerAddress is the same allowance for each client address of
	// a flow (an IPv4 address, an IPv6 /64), which stops one address from
	// spraying many accounts during an outage. Users behind one NAT
	// address share it. A negative value turns this limit off; with both
	// limits off FailOpen proceeds on every call, as it did without them.
	// The default is DefaultFailOpenPerAddress (50).
	FailOpenPerAddress int
	// FailOpenWindow is how long a spent allowance takes to come back
	// whole: one proceed returns every FailOpenWindow/FailOpenPerAccount
	// (and /FailOpenPerAddress). The default is DefaultFailOpenWindow
	// (30 minutes).
	FailOpenWindow time.Duration
	// FailOpenSubjects caps how many accounts (with destinations) and,
	// separately, how many addresses the allowance tracks, so that an
	// attacker who makes up accounts or rotates addresses cannot make the
	// client use unbounded memory: about 80 bytes a subject, 1.6 MB for
	// both tables full at the default (measured). Subjects are kept as
	// 128-bit HMACs under a random key made at New, never as identifiers.
	// A subject whose allowance has refilled is dropped. When a table is
	// full, a new subject takes the place of the one closest to a full
	// allowance, which gets back what it had not yet regained (counted in
	// Stats.Evicted): eviction does give allowance back, but the least any
	// tracked subject would get. An attacker who wants d guesses back on
	// an account must first hold every other tracked subject at d or more
	// spent, about d x FailOpenSubjects fallback proceeds (on made-up or
	// other accounts, each held to its address's allowance too); one guess
	// on each of many made-up accounts wins back at most about one guess
	// on an account under attack. The default is DefaultFailOpenSubjects
	// (10,000).
	FailOpenSubjects int
	// Now is the clock of the FailOpen allowance (call timeouts use the
	// context's). The default is time.Now.
	Now func() time.Time
}

// Client calls one tollgate. It is safe for concurrent use; make one and
// share it, so that its connections are reused.
type Client struct {
	base    string
	token   string
	source  func(ctx context.Context) (string, error)
	http    *http.Client
	timeout time.Duration
	agent   string
	now     func() time.Time
	allow   *allowance
	// breachedTimeout bounds Breached; 0 leaves it to the context.
	breachedTimeout time.Duration
}

// New returns a Client for cfg, or an error when cfg is unusable.
func New(cfg Config) (*Client, error) {
	base, err := baseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	if cfg.Token != "" && cfg.TokenSource != nil {
		return nil, errors.New("client: set Token or TokenSource, not both")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = newHTTPClient()
	}
	switch {
	case cfg.Timeout == 0:
		cfg.Timeout = DefaultTimeout
	case cfg.Timeout < 0:
		cfg.Timeout = 0
	}
	switch {
	case cfg.BreachedTimeout == 0:
		cfg.BreachedTimeout = DefaultBreachedTimeout
	case cfg.BreachedTimeout < 0:
		cfg.BreachedTimeout = 0
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	allow, err := newAllowance(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{
		base:    base,
		token:   cfg.Token,
		source:  cfg.TokenSource,
		http:    cfg.HTTPClient,
		timeout: cfg.Timeout,
		agent:   cfg.UserAgent,
		now:     cfg.Now,
		allow:   allow,

		breachedTimeout: cfg.BreachedTimeout,
	}, nil
}

// baseURL checks a base URL and returns it without a trailing slash.
func baseURL(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("client: a BaseURL is required")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", errors.New("client: BaseURL is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", errors.New("client: BaseURL must be an http or https URL")
	case u.Host == "":
		return "", errors.New("client: BaseURL has no host")
	case u.User != nil:
		return "", errors.New("client: BaseURL must not hold user info; use Token")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", errors.New("client: BaseURL must not have a query or fragment")
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// newHTTPClient is the default HTTPClient.
func newHTTPClient() *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{
		Transport: &http.Transport{
			DialContext:            dialer.DialContext,
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           64,
			MaxIdleConnsPerHost:    64,
			MaxConnsPerHost:        256,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    5 * time.Second,
			DisableCompression:     true,
			MaxResponseHeaderBytes: 64 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CloseIdleConnections closes the idle connections of the Client's
// HTTPClient.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Check asks whether an attempt may go ahead now: call it before looking at
// the credential, and keep the attempt token of a proceed for the report.
//
// The Verdict is always usable. When err is nil it is tollgate's. Otherwise
// it is mode's answer (Fallback is set; see FailMode) and err says why, for
// the caller's log: errors.Is(err, ErrUnavailable) when tollgate could not
// answer, an *Error when it refused the request. On an *Error of type
// wire.ProblemInvalidField for the field "account", do not check the
// credential: answer the end user as for a wrong password.
//
// FailOpen proceeds within the allowance of req's account and address
// (Config.FailOpenPerAccount, FailOpenPerAddress), and delays past it.
func (c *Client) Check(ctx context.Context, req wire.CheckRequest, mode FailMode) (Verdict, error) {
	var v wire.Verdict
	if err := c.verdict(ctx, "check", "/v1/check", req, &v); err != nil {
		return c.fallbackFor(mode, checkSubject(req), err), err
	}
	return Verdict{Verdict: v}, nil
}

// Report tells tollgate how an attempt ended, with the attempt token the
// check returned; call it for failures of unknown accounts exactly as for
// known ones. The Verdict is the one for the next attempt of the same
// account from the same client; a success carries a fresh device token.
//
// Pass the check's token unchanged, or none when the check gave none (a
// fallback proceed): a report without one is counted on its own, on top of
// the failure the check already counted, and tollgate counts it in
// tollgate_reports_without_attempt_total; a token that is not the one this
// call's check returned is refused, an *Error of type
// wire.ProblemInvalidField for the field "attempt".
//
// A report may be sent again after an error: an attempt settles once. As
// for Check, the Verdict is always usable and mode answers when tollgate
// does not (FailCaptcha then asks for a CAPTCHA, as a report has no solved
// one to pass). A report lets no one in, so FailOpen's allowance neither
// holds nor counts it: FailOpen's fallback report always proceeds.
func (c *Client) Report(ctx context.Context, req wire.ReportRequest, mode FailMode) (Verdict, error) {
	var v wire.Verdict
	if err := c.verdict(ctx, "report", "/v1/report", req, &v); err != nil {
		return fallback(mode, false, err), err
	}
	return Verdict{Verdict: v}, nil
}

// SendOTP asks whether a one-time code may be sent to req's destination
// now: send it on proceed only. Show the end user the same message whatever
// the verdict, so that a deny tells an attacker nothing.
//
// As for Check, the Verdict is always usable and mode answers when tollgate
// does not: FailOpen sends codes while tollgate is down, within the
// allowance of req's destination (counted like a check's account, by
// Config.FailOpenPerAccount, whatever the channel) and address, which
// still leaves an SMS pumping attack from many addresses to many numbers
// its allowance per address; FailCaptcha asks for a CAPTCHA first.
func (c *Client) SendOTP(ctx context.Context, req wire.SendRequest, mode FailMode) (Verdict, error) {
	var v wire.Verdict
	if err := c.verdict(ctx, "send", "/v1/otp/send", req, &v); err != nil {
		return c.fallbackFor(mode, sendSubject(req), err), err
	}
	return Verdict{Verdict: v}, nil
}

// Explain asks why a subject is delayed: every rule of the flow that counts
// it, with its state, and the verdict a check would get now. Nothing is
// counted. With auth configured, the token needs the admin:read scope.
func (c *Client) Explain(ctx context.Context, req wire.ExplainRequest) (wire.Explanation, error) {
	var x wire.Explanation
	if err := c.call(ctx, "explain", "/v1/admin/explain", req, &x); err != nil {
		return wire.Explanation{}, err
	}
	return x, nil
}

// Reset clears one subject's state in a flow and answers how many keys went;
// tollgate writes an audit line with req.Reason. With auth configured, the
// token needs the admin:write scope.
func (c *Client) Reset(ctx context.Context, req wire.ResetRequest) (wire.ResetResult, error) {
	var r wire.ResetResult
	if err := c.call(ctx, "reset", "/v1/admin/reset", req, &r); err != nil {
		return wire.ResetResult{}, err
	}
	return r, nil
}

// Allow adds a temporary allow entry: calls matching req's IP range,
// destination prefix or country skip the rules on that kind of subject
// until it expires. It answers the entry as tollgate keeps it (without the
// range). With auth configured, the token needs the admin:write scope.
func (c *Client) Allow(ctx context.Context, req wire.EntryRequest) (wire.Entry, error) {
	var x wire.Entry
	if err := c.call(ctx, "allow", "/v1/admin/allow", req, &x); err != nil {
		return wire.Entry{}, err
	}
	return x, nil
}

// Deny adds a temporary block (req.Action "block" or empty) or captcha
// entry, answered before any rule counts a matching call. With auth
// configured, the token needs the admin:write scope.
func (c *Client) Deny(ctx context.Context, req wire.EntryRequest) (wire.Entry, error) {
	var x wire.Entry
	if err := c.call(ctx, "deny", "/v1/admin/deny", req, &x); err != nil {
		return wire.Entry{}, err
	}
	return x, nil
}

// Entries lists the tenant's unexpired entries, oldest first; with flow,
// those that apply to it. With auth configured, the token needs the
// admin:read scope.
func (c *Client) Entries(ctx context.Context, flow string) ([]wire.Entry, error) {
	path := "/v1/admin/entries"
	if flow != "" {
		path += "?flow=" + url.QueryEscape(flow)
	}
	var l wire.Entries
	if err := c.call(ctx, "entries", path, nil, &l); err != nil {
		return nil, err
	}
	return l.Entries, nil
}

// Remove deletes an entry by id; Removed is false when the tenant had no
// such entry. With auth configured, the token needs the admin:write scope.
func (c *Client) Remove(ctx context.Context, req wire.RemoveRequest) (wire.Removed, error) {
	var r wire.Removed
	if err := c.call(ctx, "remove", "/v1/admin/remove", req, &r); err != nil {
		return wire.Removed{}, err
	}
	return r, nil
}

// Reload asks tollgate to re-read its configuration file and swap its
// policy at once, as SIGHUP does: it answers the flows in force and the
// settings the file changed that only a restart applies. A file that does
// not validate is an *Error of type wire.ProblemConfigInvalid whose Detail
// names the line; the running policy stays. With auth configured, the
// token needs the admin:write scope of the default tenant.
func (c *Client) Reload(ctx context.Context) (wire.ReloadResult, error) {
	var r wire.ReloadResult
	if err := c.call(ctx, "reload", "/v1/admin/reload", struct{}{}, &r); err != nil {
		return wire.ReloadResult{}, err
	}
	return r, nil
}

// DeadLetters lists the tenant's webhook dead letters, newest first: the
// deliveries tollgate gave up on, each naming its event (id, type,
// endpoint, last error, attempts) and holding none of its data. limit is
// how many at most, 1 to 1000; 0 asks for the server's default (100), and
// any other value is refused, an *Error of type wire.ProblemInvalidField
// for the field "limit". A server that sends no webhooks (its configuration
// has no webhooks section) answers an *Error of status 404 and type
// wire.ProblemNotFound. With auth configured, the token needs the
// admin:read scope.
func (c *Client) DeadLetters(ctx context.Context, limit int) ([]wire.DeadLetter, error) {
	path := "/v1/admin/webhooks/dead-letters"
	if limit != 0 {
		path += "?limit=" + strconv.Itoa(limit)
	}
	var l wire.DeadLetters
	if err := c.call(ctx, "dead-letters", path, nil, &l); err != nil {
		return nil, err
	}
	if l.DeadLetters == nil {
		l.DeadLetters = []wire.DeadLetter{}
	}
	return l.DeadLetters, nil
}

// ReplayWebhook puts the tenant's dead letter req.ID back for delivery to
// its endpoint, with the same webhook-id (a receiver that handled it
// already drops it) and a new age limit; tollgate writes an audit line
// with req.Reason. Replayed is false when the tenant has no dead letter by
// that id. As DeadLetters, a server that sends no webhooks answers a 404
// not-found *Error. With auth configured, the token needs the admin:write
// scope.
func (c *Client) ReplayWebhook(ctx context.Context, req wire.ReplayRequest) (wire.Replayed, error) {
	var r wire.Replayed
	if err := c.call(ctx, "replay", "/v1/admin/webhooks/replay", req, &r); err != nil {
		return wire.Replayed{}, err
	}
	return r, nil
}

// verdict is call for the verdict calls: an answer that is not one of the
// actions is no verdict. step_up answers only a report (a success's, once
// the password was verified): on a check or a send it would be a proceed
// in disguise, so it is no verdict there and the fail mode answers.
func (c *Client) verdict(ctx context.Context, op, path string, in any, v *wire.Verdict) error {
	if err := c.call(ctx, op, path, in, v); err != nil {
		return err
	}
	switch v.Action {
	case wire.ActionProceed, wire.ActionDelay, wire.ActionCaptcha, wire.ActionDeny:
		return nil
	case wire.ActionStepUp:
		if op == "report" {
			return nil
		}
	}
	return &callError{op: op, kind: ErrUnavailable, msg: "the answer is not a verdict (unknown action)"}
}

// call posts in as JSON to path and decodes a 200 answer into out. The
// error never holds a request field's value: identifiers and tokens travel
// in the body, and only the URL, tollgate's problem details (which never
// repeat input) and transport errors go into messages.
func (c *Client) call(ctx context.Context, op, path string, in, out any) error {
	method, rd := http.MethodGet, io.Reader(nil)
	if in != nil {
		body, err := json.Marshal(in)
		if err != nil { // strings, bools and ints only: cannot fail
			return fmt.Errorf("client: %s: encoding the request: %w", op, err)
		}
		method, rd = http.MethodPost, bytes.NewReader(body)
	}
	var err error
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	token := c.token
	if c.source != nil {
		if token, err = c.source(ctx); err != nil {
			return transportError(ctx, op, "no bearer token from the token source", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil { // the base URL was checked by New
		return fmt.Errorf("client: %s: %w", op, err)
	}
	h := req.Header
	if rd != nil {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Accept", "application/json, application/problem+json")
	h.Set("User-Agent", c.agent)
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return transportError(ctx, op, "tollgate does not answer", err)
	}
	defer func() {
		// Drain what is left so that the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxResponseBytes))
		_ = res.Body.Close()
	}()
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusCreated {
		return problemError(op, res)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes+1))
	if err != nil {
		return transportError(ctx, op, "reading the answer", err)
	}
	if len(b) > maxResponseBytes {
		return &callError{op: op, kind: ErrUnavailable, msg: "the answer is too large"}
	}
	if err := json.Unmarshal(b, out); err != nil {
		// The decoder's message is not repeated: it may quote the body.
		return &callError{op: op, kind: ErrUnavailable, msg: "the answer is not the JSON this call expects"}
	}
	return nil
}

// problemError reads a non-200 answer into an *Error.
func problemError(op string, res *http.Response) *Error {
	e := &Error{Op: op, Status: res.StatusCode, RequestID: res.Header.Get("X-Request-Id")}
	if mt, _, err := mime.ParseMediaType(res.Header.Get("Content-Type")); err == nil && mt == "application/problem+json" {
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxProblemBytes))
		var p wire.Problem
		if json.Unmarshal(b, &p) == nil {
			e.Type, e.Title, e.Detail, e.Field = p.Type, p.Title, p.Detail, p.Field
			if p.RequestID != "" {
				e.RequestID = p.RequestID
			}
		}
	}
	if e.Title == "" {
		e.Title = http.StatusText(res.StatusCode)
	}
	e.RetryAfter = retryAfter(res.Header.Get("Retry-After"))
	return e
}

// retryAfter parses a Retry-After header in seconds (the form tollgate
// sends); anything else is 0.
func retryAfter(v string) time.Duration {
	if v == "" || len(v) > 6 {
		return 0
	}
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int64(c-'0')
	}
	return time.Duration(n) * time.Second
}
