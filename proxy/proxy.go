package proxy

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/challenge"
)

// Engine is what the proxy asks about each inspected request: an
// *authguard.Engine, called in the process (no HTTP hop), with the stores
// and policy the API's callers share.
type Engine interface {
	Check(ctx context.Context, req authguard.CheckRequest) (authguard.Verdict, error)
	Report(ctx context.Context, req authguard.ReportRequest) (authguard.Verdict, error)
	Send(ctx context.Context, req authguard.SendRequest) (authguard.Verdict, error)
	Policy() *authguard.Policy
}

var _ Engine = (*authguard.Engine)(nil)

// Challenger is the challenge a captcha verdict asks the end user to
// solve, and the store that holds the end user's submission meanwhile: a
// *challenge.Challenger.
type Challenger interface {
	Issue(ctx context.Context, o challenge.IssueOptions) (challenge.Challenge, error)
	Verify(ctx context.Context, tenant, handle string, s challenge.Solution) (challenge.Result, error)
	Hold(ctx context.Context, tenant string, s challenge.Submission) (string, error)
	ServePage(w http.ResponseWriter, r *http.Request, ch challenge.Challenge, o challenge.PageOptions)
	Redeem(ctx context.Context, tenant string, r *http.Request, remote netip.Addr) (challenge.Redemption, error)
	PageKind() challenge.Kind
}

var _ Challenger = (*challenge.Challenger)(nil)

// The defaults of Config.
const (
	// DefaultSolutionPath is Config.SolutionPath's default, as package
	// challenge's.
	DefaultSolutionPath = "/.tollgate/challenge"
	// DefaultUpstreamTimeout is Config.UpstreamTimeout's default.
	DefaultUpstreamTimeout = 30 * time.Second
	// ChallengeHeader carries a challenge's solution on a route's request
	// sent again after a challenge answered in JSON: the form-encoded
	// fields token and nonce (proof of work), or provider, response and
	// optionally token (a CAPTCHA provider's widget). It is never
	// forwarded.
	ChallengeHeader = "Tollgate-Challenge"
)

// MinSecretBytes is the shortest Config.Secret New accepts.
const MinSecretBytes = authguard.MinSecretBytes

// Config configures a Proxy.
type Config struct {
	// Upstream is where every request goes: an absolute http or https URL
	// whose path, if any, prefixes every request's. Required.
	Upstream *url.URL
	// Routes are the login and one-time-code endpoints inspected; the
	// first that matches a request is its route. The default is none:
	// everything passes through.
	Routes []Route
	// Secret is the server's secret, at least MinSecretBytes: the key of
	// the password fingerprints is derived from it. Required.
	Secret []byte
	// Tenant is the tenant of every engine call. The default is
	// authguard.DefaultTenant.
	Tenant string
	// TrustedProxies are the address ranges of the reverse proxies and
	// load balancers in front of this proxy, and ClientIPHeader the one
	// forwarding header they write; the end user's address is resolved as
	// api/client's Proxies.ClientIP does (the right-most hop that is not
	// a trusted proxy). Forwarding headers from any other peer are
	// neither believed nor passed on. The default is none: the address
	// is the connection's peer.
	TrustedProxies []netip.Prefix
	// ClientIPHeader: see TrustedProxies. The default is
	// client.HeaderNone.
	ClientIPHeader client.ProxyHeader
	// Cookie configures the device cookie the proxy sets on a success.
	// The default is the zero CookieConfig.
	Cookie CookieConfig
	// Challenger answers captcha verdicts. The default is nil: a captcha
	// verdict is answered 429 with a problem document asking for a
	// CAPTCHA the end user cannot get here, so configure one wherever a
	// flow can answer captcha (the built-in login does).
	Challenger Challenger
	// SolutionPath is the path where the challenge page posts its
	// solution; it never reaches the upstream while a Challenger is set.
	// It must be the Challenger's. The default is DefaultSolutionPath.
	SolutionPath string
	// DelayPage, when set, is the page a delay verdict answers on a form
	// route, executed with a DelayPageData: it may depend on nothing but
	// the wait. The default is nil: a plain built-in page.
	DelayPage *template.Template
	// UpstreamTimeout bounds the wait for the upstream's response headers
	// (not the body, which streams for as long as it takes): past it the
	// answer is 504. The default is DefaultUpstreamTimeout (30s).
	UpstreamTimeout time.Duration
	// Transport carries requests to the upstream. The default is a clone
	// of http.DefaultTransport with UpstreamTimeout as its
	// ResponseHeaderTimeout and 256 idle connections.
	Transport http.RoundTripper
	// RewriteHost, when true, sends the upstream's host in the Host
	// header. The default is false: the client's Host goes through (with
	// X-Forwarded-Host), as the upstream's CSRF and redirects expect.
	RewriteHost bool
	// Registerer registers the proxy's metrics (metrics.go). The default
	// is a registry of the proxy's own.
	Registerer prometheus.Registerer
	// Logger receives the proxy's warnings: an upstream that fails, a
	// report that fails. Never an account, address, password or token.
	// The default discards everything.
	Logger *slog.Logger
	// Now dates cookies' expiry when responses are classified. The
	// default is time.Now.
	Now func() time.Time
	// Breached answers breached-password ranges (the server's corpus, or
	// the range API it forwards to): the password a route reads is hashed
	// (SHA-1) in the process, its range asked for by its 5-digit prefix
	// and its suffix looked for there, and the report of the attempt says
	// whether it was found (ReportRequest.Breached, a boolean: never the
	// hash or a part of it). The engine then counts a failure with a
	// breached password towards the credential-stuffing rule, and may
	// answer a success step_up, which the proxy answers with the route's
	// step-up page (Route.StepUpPage). A range it cannot answer is not a
	// breach. SetBreached replaces it. The default is nil: no lookup, and every report says not
	// breached.
	Breached BreachedRanges
}

// DelayPageData is what Config.DelayPage is executed with.
type DelayPageData struct {
	// Seconds is the wait, in whole seconds, at least 1: the Retry-After
	// header's value.
	Seconds int
}

// Proxy is a reverse proxy to one upstream that checks the requests of its
// routes with the engine before forwarding them, and reports their
// outcome after. It is an http.Handler, safe for concurrent use.
type Proxy struct {
	engine     Engine
	rp         *httputil.ReverseProxy
	upstream   *url.URL
	routes     atomic.Pointer[[]*compiled]
	proxies    *client.Proxies
	trusted    []netip.Prefix
	header     client.ProxyHeader
	cookie     deviceCookie
	fpKey      []byte
	challenger Challenger
	restore    func(*http.Request, challenge.Submission) (*http.Request, error)
	solution   string
	delayPage  *template.Template
	tenant     string
	rewrite    bool
	metrics    *metrics
	log        *slog.Logger
	now        func() time.Time
	breached   atomic.Pointer[rangesHolder]
	transport  http.RoundTripper
	timeout    time.Duration
}

// compiled is a route as served: the Route and what New worked out of it.
type compiled struct {
	Route
	send      bool // the flow is a send flow: no report, nothing classified
	passwords bool // the flow verifies passwords (not codes): its Password is looked up in the breached ranges
	readsBody bool // a Match reads the response body
	respond   *client.Responder
	m         routeMetrics
}

// New returns a Proxy to cfg.Upstream that asks engine about cfg.Routes'
// requests, or an error naming what in cfg cannot be served.
func New(cfg Config, engine Engine) (*Proxy, error) {
	if engine == nil {
		return nil, errors.New("proxy: an engine is required")
	}
	u := cfg.Upstream
	if u == nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("proxy: the upstream must be an absolute http or https URL without credentials, query or fragment")
	}
	if len(cfg.Secret) < MinSecretBytes {
		return nil, fmt.Errorf("proxy: the secret must be at least %d bytes", MinSecretBytes)
	}
	proxies, err := client.NewProxies(client.ProxyConfig{Trusted: cfg.TrustedProxies, Header: cfg.ClientIPHeader})
	if err != nil {
		return nil, fmt.Errorf("proxy: trusted proxies: %w", err)
	}
	cookie, err := newDeviceCookie(cfg.Cookie)
	if err != nil {
		return nil, err
	}
	if cfg.Tenant == "" {
		cfg.Tenant = authguard.DefaultTenant
	}
	if cfg.SolutionPath == "" {
		cfg.SolutionPath = DefaultSolutionPath
	}
	if !strings.HasPrefix(cfg.SolutionPath, "/") {
		return nil, errors.New("proxy: the solution path must start with /")
	}
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if cfg.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = cfg.UpstreamTimeout
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 256, 256
		cfg.Transport = t
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		engine:     engine,
		upstream:   u,
		proxies:    proxies,
		trusted:    unmapped(cfg.TrustedProxies),
		header:     cfg.ClientIPHeader,
		cookie:     cookie,
		fpKey:      fingerprintKey(cfg.Secret),
		challenger: cfg.Challenger,
		restore:    challenge.Restore,
		solution:   cfg.SolutionPath,
		delayPage:  cfg.DelayPage,
		tenant:     cfg.Tenant,
		rewrite:    cfg.RewriteHost,
		metrics:    m,
		log:        cfg.Logger,
		now:        cfg.Now,
		transport:  cfg.Transport,
		timeout:    cfg.UpstreamTimeout,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewriteRequest,
		Transport:      cfg.Transport,
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.upstreamError,
		BufferPool:     bufferPool{},
		ErrorLog:       log.New(io.Discard, "", 0), // ErrorHandler logs, without the request
	}
	if err := p.SetRoutes(cfg.Routes); err != nil {
		return nil, err
	}
	p.SetBreached(cfg.Breached)
	return p, nil
}

// SetRoutes replaces the routes, once they all check against the engine's
// policy as it is now (CheckRoutes); on an error the routes in force stay.
// Requests already inspected finish with the routes they started with.
func (p *Proxy) SetRoutes(routes []Route) error {
	policy := p.engine.Policy()
	if err := CheckRoutes(routes, policy); err != nil {
		return err
	}
	cs := make([]*compiled, len(routes))
	for i, rt := range routes {
		f := policy.Flow(rt.Flow)
		// A flow that verifies a send flow's codes, or a second factor,
		// reads a code in Password: a code is no password, and "123456" is
		// in every breach.
		c := &compiled{Route: rt, send: f.Kind == authguard.Sends, passwords: f.Verifies == "" && !f.SecondFactor}
		c.Methods = append([]string(nil), rt.Methods...)
		if c.MaxBodyBytes == 0 {
			c.MaxBodyBytes = DefaultMaxBodyBytes
		}
		if c.ResponseBodyBytes == 0 {
			c.ResponseBodyBytes = DefaultResponseBodyBytes
		}
		for _, ms := range [][]Match{rt.Success, rt.Failure} {
			for i := range ms {
				c.readsBody = c.readsBody || ms[i].readsBody()
			}
		}
		rc := client.ResponderConfig{Policy: rt.Flow}
		if rt.Body == Form {
			rc.Delay = p.writeDelayPage
		}
		r, err := client.NewResponder(rc)
		if err != nil {
			return &RouteError{Route: rt.Name, Field: "Flow", Err: err}
		}
		c.respond = r
		c.m = p.metrics.route(rt.Name)
		cs[i] = c
	}
	p.routes.Store(&cs)
	return nil
}

// Routes returns the routes in force.
func (p *Proxy) Routes() []Route {
	cs := *p.routes.Load()
	out := make([]Route, len(cs))
	for i, c := range cs {
		out[i] = c.Route
	}
	return out
}

// match is the first route of r's method and path, or nil.
func (p *Proxy) match(r *http.Request) *compiled {
	for _, c := range *p.routes.Load() {
		if matchMethod(r.Method, c.Methods) && matchPath(r.URL.Path, c.Path, c.Prefix) {
			return c
		}
	}
	return nil
}

// ServeHTTP forwards r to the upstream: as it is when it matches no route,
// else once the engine lets it go ahead.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.challenger != nil && r.URL.Path == p.solution && r.Method == http.MethodPost {
		p.serveSolution(w, r)
		return
	}
	c := p.match(r)
	if c == nil {
		p.rp.ServeHTTP(w, r)
		return
	}
	p.serveRoute(w, r, c, false)
}

// exchange is an inspected request on its way to the upstream and back,
// in its context.
type exchange struct {
	route *compiled
	start time.Time
	// report says to report the outcome: a check's proceed (enforced, or
	// in shadow mode one the engine let go ahead).
	report bool
	// would is what enforcing would have answered a request a shadow
	// route forwarded anyway; Proceed otherwise.
	would authguard.Action
	req   authguard.ReportRequest // Outcome is set once classified
}

type exchangeKey struct{}

// exchangeOf is the exchange in ctx, or nil for a request that passes
// through.
func exchangeOf(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

// serveRoute inspects r, a request of route c: it reads the route's
// fields, asks the engine, and forwards r or answers the end user.
// solved says r is a held submission whose challenge was just solved.
func (p *Proxy) serveRoute(w http.ResponseWriter, r *http.Request, c *compiled, solved bool) {
	ctx := r.Context()
	// A form route reads a body only of a form's content type: any other
	// streams through untouched (an upload), its fields read from the
	// query string alone, as PHP and Django read them.
	var body []byte
	read := c.Body == JSON || formBody(r.Header.Get("Content-Type"))
	if read {
		var ok bool
		if body, ok = p.readBody(w, r, c); !ok {
			return
		}
	}
	if h := r.Header.Get(ChallengeHeader); h != "" && p.challenger != nil && !solved {
		res, err := p.verifyHeader(ctx, h, p.clientAddr(r))
		if err != nil {
			p.unavailable(w, c, "the challenge could not be verified; try again")
			return
		}
		if res.Solved {
			solved = true
			c.m.answer(answerSolved)
		}
	}
	f, err := readFields(&c.Route, r.URL.RawQuery, r.Header.Get("Content-Type"), body)
	if err != nil {
		c.m.answer(answerRefused)
		if errors.Is(err, errUnsupportedType) {
			writeProblem(w, problemUnsupportedType, "the body's content type is not the one this route reads")
			return
		}
		writeProblem(w, problemUnreadable, "the request's fields cannot be read")
		return
	}
	if f.account == "" && !c.send || c.send && f.destination == "" {
		if c.RefuseWithoutAccount {
			c.m.answer(answerRefused)
			writeProblem(w, problemUnreadable, "the request carries no account")
			return
		}
		c.m.answer(answerUninspected)
		p.forward(w, r, body, read, nil)
		return
	}
	ip := p.clientAddr(r)
	ipText := ""
	if ip.IsValid() {
		ipText = ip.String()
	}
	device := p.cookie.token(r)
	ex := &exchange{route: c}
	var v authguard.Verdict
	if c.send {
		v, err = p.engine.Send(ctx, authguard.SendRequest{Tenant: p.tenant, Flow: c.Flow, Destination: f.destination, Channel: f.channel,
			IP: ipText, Account: f.account, DeviceToken: device, CaptchaSolved: solved})
	} else {
		fp, breached := "", false
		if f.password != "" {
			fp = p.fingerprint(f.password)
			if c.passwords {
				breached = p.breachedPassword(ctx, f.password)
			}
		}
		ex.req = authguard.ReportRequest{Tenant: p.tenant, Flow: c.Flow, Account: f.account, IP: ipText, DeviceToken: device,
			PasswordFingerprint: fp, Destination: f.destination, Channel: f.channel, Breached: breached}
		v, err = p.engine.Check(ctx, authguard.CheckRequest{Tenant: p.tenant, Flow: c.Flow, Account: f.account, IP: ipText,
			DeviceToken: device, CaptchaSolved: solved, PasswordFingerprint: fp, Destination: f.destination, Channel: f.channel})
		ex.req.Attempt = v.Attempt
	}
	if err != nil {
		p.engineError(w, c, err)
		return
	}
	if c.Mode == Shadow && v.Action != authguard.Proceed {
		// What enforcing would have answered; the engine has counted it as
		// enforcing would have (a refused check reserves nothing, so there
		// is nothing to report).
		ex.would = v.Action
		c.m.answer(answerForwarded)
		p.forward(w, r, body, read, ex)
		return
	}
	switch v.Action {
	case authguard.Proceed:
		if v.Delay > 0 && !p.hold(ctx, v.Delay) {
			return // the end user left; the attempt stays counted
		}
		ex.report = !c.send
		c.m.answer(answerForwarded)
		p.forward(w, r, body, read, ex)
	case authguard.Captcha:
		if !read { // the challenge holds the whole submission
			var ok bool
			if body, ok = p.readBody(w, r, c); !ok {
				return
			}
		}
		p.challenge(w, r, c, body, v)
	case authguard.Deny:
		c.m.answer(answerDenied)
		p.accepted(w, c)
	default:
		c.m.answer(answerDelayed)
		c.respond.Respond(w, r, wireVerdict(v))
	}
}

// readBody reads r's body whole, within the route's bound; past it, or
// when the body cannot be read, it answers and returns false: the
// upstream never sees a truncated body.
func (p *Proxy) readBody(w http.ResponseWriter, r *http.Request, c *compiled) ([]byte, bool) {
	if r.ContentLength > c.MaxBodyBytes {
		c.m.answer(answerRefused)
		writeProblem(w, problemBodyTooLarge, fmt.Sprintf("the body must be at most %d bytes on this route", c.MaxBodyBytes))
		return nil, false
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, c.MaxBodyBytes+1))
	if int64(len(body)) > c.MaxBodyBytes {
		c.m.answer(answerRefused)
		writeProblem(w, problemBodyTooLarge, fmt.Sprintf("the body must be at most %d bytes on this route", c.MaxBodyBytes))
		return nil, false
	}
	if err != nil {
		c.m.answer(answerRefused)
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeProblem(w, problemBodyTooLarge, "the body is too large")
		} else {
			writeProblem(w, problemUnreadable, "the body could not be read")
		}
		return nil, false
	}
	return body, true
}

// forward sends r to the upstream: with body as its body, byte for byte,
// when read says its body was read, else with its own body streaming. ex,
// when not nil, is settled when the upstream answers.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte, read bool, ex *exchange) {
	ctx := r.Context()
	if ex != nil {
		ex.start = time.Now()
		ctx = context.WithValue(ctx, exchangeKey{}, ex)
	}
	out := r.WithContext(ctx)
	if read {
		out.ContentLength = int64(len(body))
		out.TransferEncoding = nil
		out.Body = http.NoBody
		if len(body) > 0 {
			out.Body = io.NopCloser(bytes.NewReader(body))
		}
	}
	p.rp.ServeHTTP(w, out)
}

// formBody reports whether a body of content type ct is a form's, which a
// form route reads.
func formBody(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data")
}

// hold waits d before a proceed goes ahead (a leaky bucket's queue); false
// when the request's context ended first.
func (p *Proxy) hold(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// engineError answers a check or send the engine gave no verdict for.
func (p *Proxy) engineError(w http.ResponseWriter, c *compiled, err error) {
	switch {
	case errors.Is(err, authguard.ErrInvalidInput):
		// An identifier tollgate will not count (control characters, too
		// long): refused on the identifier alone, the same for every
		// account.
		c.m.answer(answerRefused)
		writeProblem(w, problemUnreadable, "the request's fields cannot be checked")
	case errors.Is(err, authguard.ErrOverloaded):
		c.m.answer(answerUnavailable)
		w.Header().Set("Retry-After", "1")
		writeProblem(w, problemOverloaded, "too many sign-ins are being checked; retry after Retry-After")
	default:
		p.log.Error("proxy: the engine failed", slog.String("route", c.Name), slog.String("error", err.Error()))
		p.unavailable(w, c, "the request could not be checked; try again")
	}
}

// unavailable answers 503: something the proxy needs to decide failed,
// and nothing is let through on it.
func (p *Proxy) unavailable(w http.ResponseWriter, c *compiled, detail string) {
	c.m.answer(answerUnavailable)
	w.Header().Set("Retry-After", "5")
	writeProblem(w, problemUnavailable, detail)
}

// rewriteRequest makes the upstream's request: the upstream's URL, the
// client's Host, the forwarding headers, and none of tollgate's own
// cookies or headers.
func (p *Proxy) rewriteRequest(pr *httputil.ProxyRequest) {
	pr.SetURL(p.upstream)
	if !p.rewrite {
		pr.Out.Host = pr.In.Host
	}
	p.setForwarded(pr)
	stripCookie(pr.Out.Header, p.cookie.name)
	if ex := exchangeOf(pr.In.Context()); ex != nil {
		pr.Out.Header.Del(ChallengeHeader)
		if ex.route.readsBody {
			// The transport then asks for gzip itself and decodes it, so
			// that the route's body matchers read the body as text.
			pr.Out.Header.Del("Accept-Encoding")
		}
	}
}

// setForwarded writes X-Forwarded-For, -Host and -Proto (and passes a
// Forwarded header on) as a reverse proxy does: the chain a trusted proxy
// sent, with this proxy's own hop (its peer) appended; from any other
// peer the chain is dropped, since the peer wrote it, and the upstream
// gets the peer alone.
func (p *Proxy) setForwarded(pr *httputil.ProxyRequest) {
	in := pr.In.Header
	if len(in["X-Forwarded-For"]) == 0 && len(in["Forwarded"]) == 0 && len(in["X-Forwarded-Proto"]) == 0 {
		pr.SetXForwarded()
		return
	}
	host, _, err := net.SplitHostPort(pr.In.RemoteAddr)
	if err != nil {
		host = pr.In.RemoteAddr
	}
	if !p.trustedPeer(host) {
		pr.SetXForwarded() // the Rewrite's Out has none of the peer's forwarding headers
		return
	}
	pr.Out.Header["X-Forwarded-For"] = in["X-Forwarded-For"] // SetXForwarded appends to it
	pr.SetXForwarded()
	if proto := in["X-Forwarded-Proto"]; len(proto) > 0 {
		pr.Out.Header["X-Forwarded-Proto"] = proto[:1:1]
	}
	if fwd := in["Forwarded"]; len(fwd) > 0 {
		node := host
		if strings.IndexByte(host, ':') >= 0 {
			node = `"[` + host + `]"`
		}
		pr.Out.Header["Forwarded"] = append(append([]string(nil), fwd...), "for="+node)
	}
}

// trustedPeer reports whether host, a connection's peer address, is one of
// the trusted proxies.
func (p *Proxy) trustedPeer(host string) bool {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.WithZone("").Unmap()
	for _, pf := range p.trusted {
		if pf.Contains(a) {
			return true
		}
	}
	return false
}

// unmapped are prefixes as client.NewProxies reads them: an IPv4-mapped
// prefix as its IPv4 prefix. NewProxies has refused any other shape.
func unmapped(ps []netip.Prefix) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ps))
	for _, pf := range ps {
		if pf.Addr().Is4In6() && pf.Bits() >= 96 {
			pf = netip.PrefixFrom(pf.Addr().Unmap(), pf.Bits()-96)
		}
		out = append(out, pf.Masked())
	}
	return out
}

// clientAddr is the end user's address (the invalid Addr when the
// connection's peer is no address).
func (p *Proxy) clientAddr(r *http.Request) netip.Addr { return p.proxies.ClientIP(r) }

// modifyResponse settles an inspected request once the upstream has
// answered: it classifies the answer, reports it, and sets the device
// cookie on a success. A request that passed through is left alone.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	ex := exchangeOf(resp.Request.Context())
	if ex == nil {
		return nil
	}
	c := ex.route
	c.m.upstream.Observe(time.Since(ex.start).Seconds())
	if c.send {
		if ex.would != authguard.Proceed {
			c.m.shadow(ex.would, Unknown)
		}
		return nil
	}
	r := &response{status: resp.StatusCode, header: resp.Header, now: p.now()}
	if c.readsBody && resp.StatusCode != http.StatusSwitchingProtocols {
		r.body = peekBody(resp, c.ResponseBodyBytes)
	}
	outcome := Unknown
	if resp.StatusCode != http.StatusSwitchingProtocols {
		outcome = classify(&c.Route, r)
	}
	c.m.outcome(outcome)
	if ex.would != authguard.Proceed {
		c.m.shadow(ex.would, outcome)
		p.log.Debug("proxy: a shadow route forwarded what enforcing would have refused",
			slog.String("route", c.Name), slog.String("would", ex.would.String()), slog.String("outcome", outcome.String()))
	}
	if !ex.report || outcome == Unknown {
		// Unknown reports nothing: the check's charge stays, as for any
		// attempt never reported.
		return nil
	}
	ex.req.Outcome = outcome
	// The end user hanging up now must not leave the attempt unsettled.
	ctx := context.WithoutCancel(resp.Request.Context())
	v, err := p.engine.Report(ctx, ex.req)
	if err != nil {
		p.log.Warn("proxy: the outcome could not be reported; the attempt stays counted as a failure",
			slog.String("route", c.Name), slog.String("outcome", outcome.String()), slog.String("error", err.Error()))
		return nil
	}
	if outcome == authguard.Success && stepsUp(v) {
		if c.Mode == Shadow {
			// Enforcing would have held the answer back; the end user gets
			// it, and no device cookie, which the verdict does not carry.
			c.m.shadow(v.Action, outcome)
			p.log.Debug("proxy: a shadow route delivered a success that enforcing would have held back for a step-up",
				slog.String("route", c.Name))
			return nil
		}
		if passes(c, v) {
			// The route lets these reasons through: the upstream's answer
			// goes out, without the device cookie a step_up never carries.
			c.m.answer(answerStepUpPassed)
			return nil
		}
		held := resp.Header.Values("Set-Cookie")
		p.holdBack(resp, c, v)
		if c.StepUpLogout != "" {
			p.logOut(resp.Request, c, held)
		}
		return nil
	}
	if outcome == authguard.Success && v.DeviceToken != "" {
		p.cookie.set(resp.Header, v.DeviceToken)
	}
	return nil
}

// peekBody reads up to n bytes of resp's body and puts them back in front
// of the rest, so that the end user gets the whole body.
func peekBody(resp *http.Response, n int64) []byte {
	// ReadAll grows as the body comes: a redirect's empty body costs
	// nothing near n.
	buf, _ := io.ReadAll(io.LimitReader(resp.Body, n))
	resp.Body = &prefixedBody{Reader: io.MultiReader(bytes.NewReader(buf), resp.Body), c: resp.Body}
	return buf
}

// prefixedBody is a body read from a peeked prefix and then the rest.
type prefixedBody struct {
	io.Reader
	c io.Closer
}

func (b *prefixedBody) Close() error { return b.c.Close() }

// upstreamError answers a request the upstream did not answer: 504 when it
// timed out, 502 otherwise. An inspected request is not reported: its
// check's charge stays.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	m := p.metrics.pass
	name := passRoute
	if ex := exchangeOf(r.Context()); ex != nil {
		m, name = ex.route.m, ex.route.Name
		if ex.would != authguard.Proceed {
			m.shadow(ex.would, Unknown)
		}
	}
	if r.Context().Err() != nil {
		m.upstreamErr(upstreamCanceled) // the client left: nobody reads an answer
		return
	}
	kind, status, detail := upstreamUnavailable, problemUpstreamUnavailable, "the upstream server could not be reached"
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		kind, status, detail = upstreamTimeout, problemUpstreamTimeout, "the upstream server did not answer in time"
	}
	m.upstreamErr(kind)
	p.log.Warn("proxy: the upstream failed", slog.String("route", name), slog.String("kind", kind), slog.String("error", err.Error()))
	writeProblem(w, status, detail)
}

// fingerprintKey is the key of the password fingerprints, derived from
// the server's secret.
func fingerprintKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("tollgate proxy: password fingerprint"))
	return m.Sum(nil)
}

// fingerprint is what the engine's password rules count of password, as
// an API caller computes it (docs/integrate.md: an HMAC of the password under your
// own key, never the password): hex HMAC-SHA-256 under the proxy's key.
func (p *Proxy) fingerprint(password string) string {
	m := hmac.New(sha256.New, p.fpKey)
	io.WriteString(m, password)
	return hex.EncodeToString(m.Sum(nil))
}

// copyBuffer is the size of the buffers a response is copied through.
const copyBuffer = 32 << 10

// bufferPool is the ReverseProxy's pool of copy buffers: without one it
// allocates 32 KiB per request. It pools array pointers, which a slice
// converts back to without allocating.
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { return new([copyBuffer]byte) }}

func (bufferPool) Get() []byte { return buffers.Get().(*[copyBuffer]byte)[:] }

func (bufferPool) Put(b []byte) {
	if len(b) == copyBuffer {
		buffers.Put((*[copyBuffer]byte)(b))
	}
}
