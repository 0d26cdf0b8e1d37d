package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/proxy"
)

// The one-time-code routes of the fake login.
func otpRoutes() []proxy.Route {
	return []proxy.Route{
		{Name: "otp-send", Flow: "otp_send", Path: "/otp/send", Account: "username", Destination: "phone", ChannelField: "channel"},
		{Name: "otp-verify", Flow: "otp_verify", Path: "/otp/verify", Account: "username", Password: "code", Destination: "phone", Channel: "sms",
			Success: []proxy.Match{{Status: []int{302}}},
			Failure: []proxy.Match{{Status: []int{200}, BodyContains: `id="otp"`}}},
	}
}

// postForm posts vals to target from remote.
func (h *harness) postForm(target, remote string, vals url.Values) *http.Response {
	h.t.Helper()
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(vals.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return h.do(r, remote)
}

const victim = "+44 7400 123456"

// A code send is asked before it reaches the upstream: the first goes,
// the second at once waits (the destination's backoff), and a premium-rate
// number is answered as a code sent without anything sent.
func TestProxy_ACodeSendIsAskedBeforeTheUpstreamSendsIt(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: otpRoutes()})
	send := func(phone, channel string) *http.Response {
		return h.postForm("/otp/send", ownerAddr, url.Values{"username": {owner}, "phone": {phone}, "channel": {channel}})
	}
	resp := send(victim, "sms")
	body(t, resp)
	if resp.StatusCode != http.StatusOK || h.up.logins("/otp/send") != 1 {
		t.Fatalf("the first send answered %d, upstream sends %d: want it sent", resp.StatusCode, h.up.logins("/otp/send"))
	}
	if s := h.rec.sends[0]; s.Destination != victim || s.Channel != "sms" || s.Account != owner || s.Flow != "otp_send" {
		t.Errorf("send %+v", s)
	}
	resp = send(victim, "sms")
	body(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests || h.up.logins("/otp/send") != 1 {
		t.Errorf("the second send answered %d, upstream sends %d: want 429 and nothing sent", resp.StatusCode, h.up.logins("/otp/send"))
	}
	resp = send("+449012345678", "voice")
	b := body(t, resp)
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(b), "on its way") || h.up.logins("/otp/send") != 1 {
		t.Errorf("a premium number answered %d %q, upstream sends %d: want 202 as if sent, nothing sent", resp.StatusCode, b, h.up.logins("/otp/send"))
	}
	if n := h.events.calls("report"); n != 0 {
		t.Errorf("%d reports of sends, want none", n)
	}
}

// A code typed is checked and reported like a password, with the
// destination it was sent to.
func TestProxy_ACodeTypedIsCheckedAndReported(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: otpRoutes()})
	verify := func(code string) *http.Response {
		return h.postForm("/otp/verify", ownerAddr, url.Values{"username": {owner}, "phone": {victim}, "code": {code}})
	}
	body(t, verify("000000"))
	if ev := h.events.last("report"); ev.Outcome != authguard.Failure || ev.Flow != "otp_verify" {
		t.Errorf("a wrong code reported %v on %s, want a failure on otp_verify", ev.Outcome, ev.Flow)
	}
	if c := h.rec.lastCheck(); c.Destination != victim || c.Channel != "sms" {
		t.Errorf("the check named %q %q, want the destination and sms", c.Destination, c.Channel)
	}
	resp := verify("123456")
	body(t, resp)
	if ev := h.events.last("report"); resp.StatusCode != http.StatusFound || ev.Outcome != authguard.Success {
		t.Errorf("the right code answered %d and reported %v, want 302 and a success", resp.StatusCode, ev.Outcome)
	}
}

// downStore fails every call, as an unreachable Redis.
type downStore struct{}

var errDown = errors.New("test store: connection refused")

func (downStore) Do(context.Context, []authguard.Op) ([]authguard.Result, error) { return nil, errDown }
func (downStore) Ping(context.Context) error                                     { return errDown }
func (downStore) Close() error                                                   { return nil }

// With the store down each flow answers by its fail mode, as for an API
// caller: login (fail open) from the local fallback, otp_verify (fail
// closed) with a delay, and never a pass-through.
func TestProxy_AStoreThatIsDownIsAnsweredByTheFlowsFailMode(t *testing.T) {
	h := newHarness(t, proxy.Config{Routes: append(otpRoutes(), formRoute())}, func(c *authguard.Config) {
		c.Store, c.Fallback = downStore{}, memstore.New(memstore.Config{})
	})
	resp := h.post(ownerAddr, owner, ownerPassword)
	body(t, resp)
	if resp.StatusCode != http.StatusFound {
		t.Errorf("login (fail open) answered %d, want the upstream's 302 from the fallback", resp.StatusCode)
	}
	resp = h.postForm("/otp/verify", ownerAddr, url.Values{"username": {owner}, "phone": {victim}, "code": {"123456"}})
	body(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" || h.up.logins("/otp/verify") != 0 {
		t.Errorf("otp_verify (fail closed) answered %d Retry-After %q, upstream %d: want 429 after 2s, nothing forwarded",
			resp.StatusCode, resp.Header.Get("Retry-After"), h.up.logins("/otp/verify"))
	}
}

// countingStore counts the batches the engine sends its store.
type countingStore struct {
	authguard.Store
	mu    sync.Mutex
	calls int
}

func (s *countingStore) Do(ctx context.Context, ops []authguard.Op) ([]authguard.Result, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return s.Store.Do(ctx, ops)
}

// A login through the proxy costs what an integrated caller's does: one
// check and one report, one store round trip each (two for a success,
// whose known network the engine records once it knows no step-up is
// due), and nothing for a request of no route.
func TestProxy_ALoginCostsOneCheckAndOneReportAndNothingMore(t *testing.T) {
	store := &countingStore{Store: memstore.New(memstore.Config{})}
	h := newHarness(t, proxy.Config{Routes: []proxy.Route{formRoute()}}, func(c *authguard.Config) { c.Store = store })
	body(t, h.post(ownerAddr, owner, "wrong"))
	body(t, h.post(ownerAddr, owner, ownerPassword))
	body(t, h.do(httptest.NewRequest(http.MethodGet, "/home", nil), ownerAddr))
	if h.events.calls("check") != 2 || h.events.calls("report") != 2 || store.calls != 5 {
		t.Errorf("%d checks, %d reports, %d store round trips; want 2, 2 and 5",
			h.events.calls("check"), h.events.calls("report"), store.calls)
	}
}
