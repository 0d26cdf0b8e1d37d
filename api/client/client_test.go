package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// The identifiers and the token every test uses: none of them may ever
// appear in an error message.
const (
	alice     = "alice@example.com"
	aliceIP   = "203.0.113.7"
	aliceSMS  = "+44 7400 123456"
	testToken = "test-bearer-token-not-for-logs"
)

// secrets are what must never be in an error message.
var secrets = []string{alice, aliceIP, aliceSMS, testToken, "7400"}

func login() wire.CheckRequest {
	return wire.CheckRequest{Flow: "login", Account: alice, IP: aliceIP}
}

// tollgateServer is the real API on a memory store and a manual clock,
// behind an httptest server on 127.0.0.1 that records each request.
type tollgateServer struct {
	*httptest.Server
	engine *authguard.Engine
	clock  *testclock.Clock

	mu    sync.Mutex
	calls []recordedCall
	conns atomic.Int64 // connections opened
}

// recordedCall is one request as the server got it.
type recordedCall struct {
	path, authorization, userAgent, contentType string
	body                                        string
}

// startTollgate starts a tollgateServer; configure, if any, changes the
// engine's config (its Store is the memory store).
func startTollgate(t *testing.T, configure ...func(*authguard.Config)) *tollgateServer {
	t.Helper()
	ts := &tollgateServer{clock: testclock.New(testclock.Epoch)}
	cfg := authguard.Config{
		Policy: builtinpolicy.Policy(),
		Store:  memstore.New(memstore.Config{Now: ts.clock.Now}),
		Secret: []byte("tollgate-client-tests-secret-32-bytes"),
		Now:    ts.clock.Now,
	}
	for _, c := range configure {
		c(&cfg)
	}
	engine, err := authguard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts.engine = engine
	handler, err := api.New(api.Config{Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts.mu.Lock()
		ts.calls = append(ts.calls, recordedCall{
			path: r.URL.Path, authorization: r.Header.Get("Authorization"),
			userAgent: r.Header.Get("User-Agent"), contentType: r.Header.Get("Content-Type"),
			body: string(body),
		})
		ts.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		handler.ServeHTTP(w, r)
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			ts.conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// recorded returns the requests the server got so far.
func (ts *tollgateServer) recorded() []recordedCall {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Clone(ts.calls)
}

// newClient returns a client of url with cfg's other fields.
func newClient(t *testing.T, url string, cfg client.Config) *client.Client {
	t.Helper()
	cfg.BaseURL = url
	c, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// noSecrets fails the test when err's message holds an identifier or the
// token.
func noSecrets(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q holds %q", err, s)
		}
	}
}

// A check's attempt token goes back with the report, so that a success
// refunds that attempt's charge, and the success returns a device token
// that a later check can carry.
func TestClient_CheckReportRoundTrip(t *testing.T) {
	ts := startTollgate(t)
	c := newClient(t, ts.URL, client.Config{})
	ctx := context.Background()

	v, err := c.Check(ctx, login(), client.FailDelay)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if v.Action != wire.ActionProceed || v.Attempt == "" || v.Fallback {
		t.Fatalf("Check = %+v, want tollgate's proceed with an attempt token", v)
	}
	if x, err := c.Explain(ctx, wire.ExplainRequest{Flow: "login", Account: alice}); err != nil || backoffCount(x) != 1 {
		t.Fatalf("after a check, Explain = %+v, %v; want the attempt counted as a failure until reported", x, err)
	}

	r, err := c.Report(ctx, wire.ReportRequest{Flow: "login", Account: alice, IP: aliceIP, Outcome: wire.OutcomeSuccess, Attempt: v.Attempt}, client.FailDelay)
	if err != nil {
		t.Fatalf("Report: %v", err)
	}
	if r.Action != wire.ActionProceed || r.DeviceToken == "" || r.Fallback {
		t.Fatalf("Report(success) = %+v, want proceed with a device token", r)
	}
	calls := ts.recorded()
	var sent wire.ReportRequest
	if err := json.Unmarshal([]byte(calls[len(calls)-1].body), &sent); err != nil || sent.Attempt != v.Attempt {
		t.Errorf("the report carried attempt %q (%v), want the check's", sent.Attempt, err)
	}
	if x, err := c.Explain(ctx, wire.ExplainRequest{Flow: "login", Account: alice}); err != nil || backoffCount(x) != 0 {
		t.Errorf("after the success report, Explain = %+v, %v; want the attempt's charge refunded", x, err)
	}

	req := login()
	req.DeviceToken = r.DeviceToken
	if v, err := c.Check(ctx, req, client.FailDelay); err != nil || v.Action != wire.ActionProceed {
		t.Errorf("Check with the device token = %+v, %v; want proceed", v, err)
	}
	if got, want := ts.recorded()[0].body, `{"flow":"login","account":"alice@example.com","ip":"203.0.113.7"}`; got != want {
		t.Errorf("the check's body = %s, want %s (empty optional fields left out)", got, want)
	}
}

func backoffCount(x wire.Explanation) int {
	for _, r := range x.Rules {
		if r.Rule == "account_backoff" {
			return r.Count
		}
	}
	return -1
}

// Five failed attempts bring a delay; a reset lifts it.
func TestClient_DelayAfterRepeatedFailures(t *testing.T) {
	ts := startTollgate(t)
	c := newClient(t, ts.URL, client.Config{})
	ctx := context.Background()
	for i := range 5 {
		v, err := c.Check(ctx, login(), client.FailDelay)
		if err != nil || v.Action != wire.ActionProceed {
			t.Fatalf("check %d: %+v, %v; want proceed", i+1, v, err)
		}
		if _, err := c.Report(ctx, wire.ReportRequest{Flow: "login", Account: alice, IP: aliceIP, Outcome: wire.OutcomeFailure, Attempt: v.Attempt}, client.FailDelay); err != nil {
			t.Fatalf("report %d: %v", i+1, err)
		}
	}
	v, err := c.Check(ctx, login(), client.FailOpen)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if v.Action != wire.ActionDelay || v.DelayMS <= 0 || v.RetryAfter < 1 || v.Fallback || !slices.Contains(v.Reasons, "account_backoff") {
		t.Fatalf("after 5 failures: %+v, want tollgate's delay for account_backoff", v)
	}

	res, err := c.Reset(ctx, wire.ResetRequest{Flow: "login", Account: alice, Reason: "test: owner verified"})
	if err != nil || res.Deleted < 1 {
		t.Fatalf("Reset = %+v, %v; want keys deleted", res, err)
	}
	if v, err := c.Check(ctx, login(), client.FailDelay); err != nil || v.Action != wire.ActionProceed {
		t.Errorf("after the reset: %+v, %v; want proceed", v, err)
	}
}

// A request tollgate refuses is an *Error with the problem's members; it
// is no unavailability, so even a fail-open call site gets a closed answer.
func TestClient_BadRequestIsAnErrorWithTheProblem(t *testing.T) {
	ts := startTollgate(t)
	c := newClient(t, ts.URL, client.Config{})
	tests := []struct {
		name      string
		req       wire.CheckRequest
		wantType  string
		wantField string
	}{
		{"an IP with a zone", wire.CheckRequest{Flow: "login", Account: alice, IP: "fe80::1%eth0"}, wire.ProblemInvalidField, "ip"},
		{"no account", wire.CheckRequest{Flow: "login", IP: aliceIP}, wire.ProblemMissingField, "account"},
		{"an unknown flow", wire.CheckRequest{Flow: "nope", Account: alice, IP: aliceIP}, wire.ProblemInvalidField, "flow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := c.Check(context.Background(), tt.req, client.FailOpen)
			var e *client.Error
			if !errors.As(err, &e) {
				t.Fatalf("Check error = %v (%T), want *client.Error", err, err)
			}
			if e.Status != 400 || e.Type != tt.wantType || e.Field != tt.wantField || e.Detail == "" || e.RequestID == "" || e.Op != "check" {
				t.Errorf("error = %+v, want 400 %s on %s with a detail and a request id", e, tt.wantType, tt.wantField)
			}
			if errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrTimeout) {
				t.Errorf("a 400 matches ErrUnavailable or ErrTimeout: %v", err)
			}
			if !v.Fallback || v.Action != wire.ActionDelay || !slices.Equal(v.Reasons, []string{client.ReasonFallback}) {
				t.Errorf("verdict = %+v, want a fallback delay: a refused request never fails open", v)
			}
			noSecrets(t, err)
		})
	}
}

// The bearer token, static or from the token source, goes in the
// Authorization header, with the User-Agent and the JSON content type.
func TestClient_SendsTheBearerToken(t *testing.T) {
	ts := startTollgate(t)
	var sourceHadDeadline atomic.Bool
	tests := []struct {
		name      string
		cfg       client.Config
		wantAuth  string
		wantAgent string
	}{
		{"static token", client.Config{Token: testToken}, "Bearer " + testToken, client.DefaultUserAgent},
		{"token source", client.Config{UserAgent: "shop-login/2", TokenSource: func(ctx context.Context) (string, error) {
			_, ok := ctx.Deadline()
			sourceHadDeadline.Store(ok)
			return "from-source", nil
		}}, "Bearer from-source", "shop-login/2"},
		{"no token", client.Config{}, "", client.DefaultUserAgent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, ts.URL, tt.cfg)
			if _, err := c.Check(context.Background(), login(), client.FailDelay); err != nil {
				t.Fatalf("Check: %v", err)
			}
			calls := ts.recorded()
			got := calls[len(calls)-1]
			if got.authorization != tt.wantAuth || got.userAgent != tt.wantAgent || got.contentType != "application/json" {
				t.Errorf("sent Authorization %q, User-Agent %q, Content-Type %q; want %q, %q, application/json",
					got.authorization, got.userAgent, got.contentType, tt.wantAuth, tt.wantAgent)
			}
		})
	}
	if !sourceHadDeadline.Load() {
		t.Error("the token source was called without the call's deadline")
	}

	t.Run("token source fails", func(t *testing.T) {
		before := len(ts.recorded())
		c := newClient(t, ts.URL, client.Config{TokenSource: func(context.Context) (string, error) {
			return "", errors.New("identity provider down")
		}})
		v, err := c.Check(context.Background(), login(), client.FailOpen)
		if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), "identity provider down") {
			t.Errorf("error = %v, want ErrUnavailable with the source's error", err)
		}
		if !v.Fallback || v.Action != wire.ActionProceed {
			t.Errorf("verdict = %+v, want the fail-open proceed", v)
		}
		if n := len(ts.recorded()); n != before {
			t.Errorf("a call without a token reached tollgate")
		}
	})
}

// wantFallback checks that a verdict is the fallback with action and no
// token.
func wantFallback(t *testing.T, v client.Verdict, action string) {
	t.Helper()
	if !v.Fallback || v.Action != action || v.Attempt != "" || v.DeviceToken != "" || !slices.Equal(v.Reasons, []string{client.ReasonFallback}) {
		t.Errorf("verdict = %+v, want a fallback %s without tokens, reason %s", v, action, client.ReasonFallback)
	}
}

// failModeCases are the fail modes' answers while tollgate is unavailable.
var failModeCases = []struct {
	name          string
	mode          client.FailMode
	captchaSolved bool
	want          string
}{
	{"fail open", client.FailOpen, false, wire.ActionProceed},
	{"fail delay", client.FailDelay, false, wire.ActionDelay},
	{"fail captcha", client.FailCaptcha, false, wire.ActionCaptcha},
	{"fail captcha, captcha solved", client.FailCaptcha, true, wire.ActionProceed},
}

// With tollgate down (nothing listens), every call answers its fail mode,
// with an error that is ErrUnavailable but no timeout.
func TestClient_ServerDown_FailModes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	c := newClient(t, url, client.Config{Token: testToken})
	for _, tt := range failModeCases {
		t.Run(tt.name, func(t *testing.T) {
			req := login()
			req.CaptchaSolved = tt.captchaSolved
			v, err := c.Check(context.Background(), req, tt.mode)
			if !errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrTimeout) {
				t.Errorf("error = %v, want ErrUnavailable, not ErrTimeout", err)
			}
			wantFallback(t, v, tt.want)
			noSecrets(t, err)
		})
	}
	t.Run("fail delay's delay", func(t *testing.T) {
		v, _ := c.Check(context.Background(), login(), client.FailDelay)
		if v.DelayMS != client.FallbackDelay.Milliseconds() || v.RetryAfter != 1 {
			t.Errorf("verdict = %+v, want a delay of FallbackDelay", v)
		}
	})
	t.Run("report and send", func(t *testing.T) {
		r, err := c.Report(context.Background(), wire.ReportRequest{Flow: "login", Account: alice, IP: aliceIP, Outcome: wire.OutcomeSuccess}, client.FailCaptcha)
		if !errors.Is(err, client.ErrUnavailable) {
			t.Errorf("Report error = %v, want ErrUnavailable", err)
		}
		wantFallback(t, r, wire.ActionCaptcha)
		s, err := c.SendOTP(context.Background(), wire.SendRequest{Destination: aliceSMS, Channel: wire.ChannelSMS, IP: aliceIP}, client.FailOpen)
		if !errors.Is(err, client.ErrUnavailable) {
			t.Errorf("SendOTP error = %v, want ErrUnavailable", err)
		}
		wantFallback(t, s, wire.ActionProceed)
		noSecrets(t, err)
		if _, err := c.Explain(context.Background(), wire.ExplainRequest{Flow: "login", Account: alice}); !errors.Is(err, client.ErrUnavailable) {
			t.Errorf("Explain error = %v, want ErrUnavailable", err)
		}
	})
}

// startStalled starts a server whose handler never answers: it holds each
// request until the client gives up or the test ends.
func startStalled(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so that the server notices a client hanging up
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: frees held handlers
	return srv
}

// A tollgate that does not answer within the timeout is a timeout, which
// is an unavailability: the fail mode answers.
func TestClient_SlowServer_TimesOutIntoTheFailMode(t *testing.T) {
	t.Parallel() // it waits out real timeouts; the package's other waits overlap them
	srv := startStalled(t)
	c := newClient(t, srv.URL, client.Config{Timeout: 20 * time.Millisecond, Token: testToken})
	for _, tt := range failModeCases {
		t.Run(tt.name, func(t *testing.T) {
			req := login()
			req.CaptchaSolved = tt.captchaSolved
			v, err := c.Check(context.Background(), req, tt.mode)
			if !errors.Is(err, client.ErrTimeout) || !errors.Is(err, client.ErrUnavailable) {
				t.Errorf("error = %v, want ErrTimeout (and so ErrUnavailable)", err)
			}
			wantFallback(t, v, tt.want)
			noSecrets(t, err)
		})
	}
	t.Run("the caller's deadline", func(t *testing.T) {
		c := newClient(t, srv.URL, client.Config{Timeout: -1})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		v, err := c.SendOTP(ctx, wire.SendRequest{Destination: aliceSMS, Channel: wire.ChannelSMS, IP: aliceIP}, client.FailCaptcha)
		if !errors.Is(err, client.ErrTimeout) {
			t.Errorf("error = %v, want ErrTimeout", err)
		}
		wantFallback(t, v, wire.ActionCaptcha)
	})
	t.Run("the caller cancels", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		v, err := c.Check(ctx, login(), client.FailOpen)
		if err == nil || errors.Is(err, client.ErrUnavailable) || !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled and no unavailability", err)
		}
		wantFallback(t, v, wire.ActionDelay) // closed, whatever the mode
	})
}

// stalledStore holds every batch until release is closed.
type stalledStore struct {
	authguard.Store
	entered chan struct{}
	release chan struct{}
}

func (s *stalledStore) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.Store.Do(ctx, ops)
}

// A tollgate shedding load answers a check with a delay verdict of reason
// overloaded, whatever the caller's fail mode: before, it answered 503,
// which FailOpen let through unchecked, so a flood was a bypass.
func TestClient_AShedCheckIsADelayWhateverTheFailMode(t *testing.T) {
	ss := &stalledStore{entered: make(chan struct{}, 1), release: make(chan struct{})}
	ts := startTollgate(t, func(c *authguard.Config) {
		ss.Store = c.Store
		c.Store, c.MaxInFlight, c.QueueWait = ss, 1, 5*time.Millisecond
	})
	c := newClient(t, ts.URL, client.Config{})
	held := make(chan error, 1)
	go func() {
		_, err := ts.engine.Check(context.Background(), authguard.CheckRequest{Flow: "login", Account: "held@example.com", IP: "192.0.2.1"})
		held <- err
	}()
	<-ss.entered // the one call allowed in flight now waits in the store
	defer func() {
		close(ss.release)
		if err := <-held; err != nil {
			t.Errorf("the held call: %v", err)
		}
	}()

	for _, mode := range []client.FailMode{client.FailDelay, client.FailOpen, client.FailCaptcha} {
		v, err := c.Check(context.Background(), login(), mode)
		if err != nil || v.Fallback || v.Action != wire.ActionDelay || v.DelayMS != 2000 || !slices.Equal(v.Reasons, []string{"overloaded"}) {
			t.Errorf("%v: %+v %v, want tollgate's own delay of 2 s, reason overloaded, no error", mode, v, err)
		}
	}
}

// What answers at tollgate's address other than tollgate's verdicts: a
// proxy's 5xx and 429 are unavailability, a Retry-After sets FailDelay's
// delay (capped), a 200 that is no verdict is unavailability too.
func TestClient_OtherAnswers(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		header      map[string]string
		body        string
		unavailable bool
		wantDelayMS int64
	}{
		{"a proxy's 502 page", 502, map[string]string{"Content-Type": "text/html"}, "<html>bad gateway</html>", true, 1000},
		{"503 with Retry-After 7", 503, map[string]string{"Retry-After": "7"}, "", true, 7000},
		{"503 with Retry-After an hour", 503, map[string]string{"Retry-After": "3600"}, "", true, client.MaxFallbackDelay.Milliseconds()},
		{"a proxy's 429", 429, map[string]string{"Retry-After": "2"}, "", true, 2000},
		{"500 internal", 500, map[string]string{"Content-Type": "application/problem+json"},
			`{"type":"https://tollgate.dev/problems/internal","title":"Internal error","status":500,"detail":"tollgate failed to answer"}`, true, 1000},
		{"200 with an unknown action", 200, map[string]string{"Content-Type": "application/json"},
			`{"action":"maybe","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"","device_token":""}`, true, 1000},
		{"200 that is not JSON", 200, nil, "ok", true, 1000},
		{"a redirect", 307, map[string]string{"Location": "http://127.0.0.1:1/v1/check"}, "", false, 1000},
		{"401 unauthenticated", 401, map[string]string{"Content-Type": "application/problem+json"},
			`{"type":"https://tollgate.dev/problems/unauthenticated","title":"Unauthenticated","status":401,"detail":"a valid bearer token is required"}`, false, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, client.Config{})
			v, err := c.Check(context.Background(), login(), client.FailDelay)
			if err == nil || errors.Is(err, client.ErrUnavailable) != tt.unavailable {
				t.Fatalf("error = %v, want one that is ErrUnavailable: %v", err, tt.unavailable)
			}
			if tt.status != 200 {
				var e *client.Error
				if !errors.As(err, &e) || e.Status != tt.status || e.Title == "" {
					t.Errorf("error = %#v, want an *Error with status %d and a title", err, tt.status)
				}
			}
			wantFallback(t, v, wire.ActionDelay)
			if v.DelayMS != tt.wantDelayMS {
				t.Errorf("DelayMS = %d, want %d", v.DelayMS, tt.wantDelayMS)
			}
			if strings.Contains(err.Error(), "bad gateway</html>") {
				t.Errorf("error %q repeats a body that is not tollgate's", err)
			}
		})
	}
}

// Calls reuse one connection: each answer is read to the end and closed.
func TestClient_ReusesConnections(t *testing.T) {
	ts := startTollgate(t)
	c := newClient(t, ts.URL, client.Config{})
	ctx := context.Background()
	for range 10 {
		if _, err := c.Check(ctx, login(), client.FailDelay); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Check(ctx, wire.CheckRequest{Flow: "login", IP: aliceIP}, client.FailDelay); err == nil {
			t.Fatal("a check without an account was answered")
		}
	}
	if n := ts.conns.Load(); n != 1 {
		t.Errorf("20 sequential calls opened %d connections, want 1", n)
	}
}

// SendOTP asks before a code goes out; a destination of the wrong kind for
// the channel is the caller's 400.
func TestClient_SendOTP(t *testing.T) {
	ts := startTollgate(t)
	c := newClient(t, ts.URL, client.Config{})
	v, err := c.SendOTP(context.Background(), wire.SendRequest{Destination: aliceSMS, Channel: wire.ChannelSMS, IP: aliceIP}, client.FailDelay)
	if err != nil || v.Action != wire.ActionProceed || v.Fallback {
		t.Fatalf("SendOTP = %+v, %v; want tollgate's proceed", v, err)
	}
	_, err = c.SendOTP(context.Background(), wire.SendRequest{Destination: aliceSMS, Channel: wire.ChannelEmail, IP: aliceIP}, client.FailOpen)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 400 || e.Op != "send" || e.Field == "" {
		t.Errorf("a phone number for e-mail: %v, want a 400 *Error naming a field", err)
	}
	noSecrets(t, err)
}

// New refuses configurations it cannot use, without repeating a secret.
func TestNew_RefusesUnusableConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  client.Config
	}{
		{"no base URL", client.Config{}},
		{"not http", client.Config{BaseURL: "ftp://127.0.0.1"}},
		{"no host", client.Config{BaseURL: "http:///v1"}},
		{"user info", client.Config{BaseURL: "http://svc:" + testToken + "@127.0.0.1"}},
		{"a query", client.Config{BaseURL: "http://127.0.0.1/?x=1"}},
		{"token and source", client.Config{BaseURL: "http://127.0.0.1", Token: testToken,
			TokenSource: func(context.Context) (string, error) { return "", nil }}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := client.New(tt.cfg)
			if err == nil || c != nil {
				t.Fatalf("New = %v, %v; want an error", c, err)
			}
			noSecrets(t, err)
		})
	}
	if _, err := client.New(client.Config{BaseURL: "https://tollgate.internal/prefix/"}); err != nil {
		t.Errorf("a base URL with a path: %v", err)
	}
}

func TestFailMode_String(t *testing.T) {
	tests := []struct {
		mode client.FailMode
		want string
	}{
		{client.FailDelay, "delay"}, {client.FailCaptcha, "captcha"}, {client.FailOpen, "open"}, {client.FailMode(9), "FailMode(9)"},
	}
	for _, tt := range tests {
		if got := tt.mode.String(); got != tt.want {
			t.Errorf("FailMode(%d).String() = %q, want %q", tt.mode, got, tt.want)
		}
	}
	var zero client.FailMode
	if zero != client.FailDelay {
		t.Error("the zero FailMode is not FailDelay")
	}
}

// TestClient_EntriesAllowDenyListRemove: on-call tooling written in Go
// blocks a range, sees checks from it refused, lists and removes the entry.
func TestClient_EntriesAllowDenyListRemove(t *testing.T) {
	ts := startTollgate(t)
	c := newClient(t, ts.URL, client.Config{})
	ctx := context.Background()
	x, err := c.Deny(ctx, wire.EntryRequest{Flow: "login", IPRange: "203.0.113.0/24", ExpiresIn: "2h", Reason: "incident 4"})
	if err != nil || x.Kind != "block" || x.Length != 24 || x.ID == "" {
		t.Fatalf("Deny = %+v, %v", x, err)
	}
	if _, err := c.Allow(ctx, wire.EntryRequest{IPRange: "198.51.100.0/24", ExpiresIn: "1d", Reason: "office"}); err != nil {
		t.Fatalf("Allow: %v", err)
	}
	v, err := c.Check(ctx, wire.CheckRequest{Flow: "login", Account: "a@example.com", IP: "203.0.113.5"}, client.FailOpen)
	if err != nil || v.Action != wire.ActionDelay || v.RetryAfter != 7200 {
		t.Errorf("a check from the blocked range: %+v, %v", v, err)
	}
	l, err := c.Entries(ctx, "login")
	if err != nil || len(l) != 2 {
		t.Fatalf("Entries = %d, %v; want 2", len(l), err)
	}
	if _, err := c.Deny(ctx, wire.EntryRequest{IPRange: "0.0.0.0/0", ExpiresIn: "1h", Reason: "r"}); err == nil {
		t.Error("a block of the whole Internet was accepted")
	} else {
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Field != "ip_range" || strings.Contains(err.Error(), "0.0.0.0") {
			t.Errorf("Deny of 0.0.0.0/0: %v", err)
		}
	}
	if r, err := c.Remove(ctx, wire.RemoveRequest{ID: x.ID, Reason: "closed"}); err != nil || !r.Removed {
		t.Errorf("Remove = %+v, %v", r, err)
	}
	if v, _ := c.Check(ctx, wire.CheckRequest{Flow: "login", Account: "a@example.com", IP: "203.0.113.5"}, client.FailOpen); v.Action != wire.ActionProceed || v.Fallback {
		t.Errorf("after the removal: %+v", v)
	}
}

// TestClient_Reload: a deployment script reloads tollgate's policy and
// learns what needs a restart; a server with no file to re-read (or a bad
// one) answers config-invalid, which the client surfaces as a typed error.
func TestClient_Reload(t *testing.T) {
	ts := startTollgate(t)
	c := newClient(t, ts.URL, client.Config{})
	_, err := c.Reload(context.Background())
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Op != "reload" || ce.Status != http.StatusConflict || ce.Type != wire.ProblemConfigInvalid {
		t.Errorf("Reload on a server with no file = %v, want a 409 config-invalid *client.Error", err)
	}
	if calls := ts.recorded(); len(calls) != 1 || calls[0].path != "/v1/admin/reload" || calls[0].body != "{}" {
		t.Errorf("the request: %+v, want POST /v1/admin/reload with {}", calls)
	}

	engine, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: memstore.New(memstore.Config{}), Secret: []byte("tollgate-client-tests-secret-32-bytes")})
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Config{Engine: engine, Reload: func() (wire.ReloadResult, error) {
		return wire.ReloadResult{Flows: []string{"login"}, RestartNeeded: []string{"listen"}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	r, err := newClient(t, srv.URL, client.Config{}).Reload(context.Background())
	if err != nil || !slices.Equal(r.Flows, []string{"login"}) || !slices.Equal(r.RestartNeeded, []string{"listen"}) {
		t.Errorf("Reload = %+v, %v", r, err)
	}
}

// The default timeout is DefaultTimeout (250 ms): a tollgate that does not
// answer is a timeout after at least that long, never a wait without end.
// (The shared vectors run with a longer timeout of their own.)
func TestClient_TheDefaultTimeoutIs250ms(t *testing.T) {
	t.Parallel() // it waits out real timeouts; the package's other waits overlap them
	srv := startStalled(t)
	c := newClient(t, srv.URL, client.Config{})
	start := time.Now()
	_, err := c.Check(context.Background(), login(), client.FailDelay)
	if took := time.Since(start); !errors.Is(err, client.ErrTimeout) || took < client.DefaultTimeout-10*time.Millisecond {
		t.Errorf("a stalled server: %v after %v, want ErrTimeout after at least %v", err, took, client.DefaultTimeout)
	}
	if client.DefaultTimeout != 250*time.Millisecond {
		t.Errorf("DefaultTimeout = %v, want 250ms", client.DefaultTimeout)
	}
}
