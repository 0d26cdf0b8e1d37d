package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
)

// stuff reports five wrong passwords for alice from the stuffer's address
// and checks that her next login is delayed.
func stuff(t *testing.T, c *client.Client) {
	t.Helper()
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
	if err != nil || v.Action != wire.ActionDelay || !slices.Contains(v.Reasons, "account_backoff") {
		t.Fatalf("after 5 failures: %+v, %v; want tollgate's delay for account_backoff", v, err)
	}
}

// ownerGetsIn fails the test unless alice's next check proceeds at once.
func ownerGetsIn(t *testing.T, c *client.Client) {
	t.Helper()
	v, err := c.Check(context.Background(), login(), client.FailDelay)
	if err != nil || v.Action != wire.ActionProceed || v.DelayMS != 0 || v.Fallback {
		t.Errorf("after the password change: %+v, %v; want tollgate's proceed without a delay", v, err)
	}
}

// A stuffer's failures hold the account's owner back; once the owner has
// reset the password, the client's one call clears the account, and the
// owner's next login goes ahead at once with no admin reset. The report is
// exactly the wire's: no attempt, the account as the login checks it.
func TestClient_APasswordChangeAfterStuffingLetsTheOwnerInAtOnce(t *testing.T) {
	ts := startTollgate(t)
	c := newClient(t, ts.URL, client.Config{})
	stuff(t, c)
	n := len(ts.recorded())

	if err := c.PasswordChanged(context.Background(), client.PasswordChange{Account: alice, IP: aliceIP}); err != nil {
		t.Fatalf("PasswordChanged: %v", err)
	}
	calls := ts.recorded()
	if got, want := len(calls), n+1; got != want {
		t.Fatalf("PasswordChanged made %d calls, want 1", got-n)
	}
	if got, want := calls[n].path, "/v1/report"; got != want {
		t.Errorf("PasswordChanged posted to %s, want %s", got, want)
	}
	if got, want := calls[n].body, `{"flow":"login","account":"alice@example.com","ip":"203.0.113.7","outcome":"password_changed"}`; got != want {
		t.Errorf("PasswordChanged sent %s, want %s", got, want)
	}
	ownerGetsIn(t, c)
}

// The Guard's call takes the address as its checks do, from the
// connection (GuardConfig.Proxies trusts none here), never from a header
// the client sets, and the Guard's flow.
func TestGuard_APasswordChangeAfterStuffingLetsTheOwnerInAtOnce(t *testing.T) {
	ts := startTollgate(t)
	c := newClient(t, ts.URL, client.Config{})
	g, err := client.NewGuard(client.GuardConfig{Client: c, AccountField: "username"})
	if err != nil {
		t.Fatal(err)
	}
	stuff(t, c)
	n := len(ts.recorded())

	r := httptest.NewRequest(http.MethodPost, "/account/password", nil)
	r.RemoteAddr = aliceIP + ":40000"
	r.Header.Set("X-Forwarded-For", "198.51.100.1")
	if err := g.PasswordChanged(r, alice); err != nil {
		t.Fatalf("Guard.PasswordChanged: %v", err)
	}
	if got, want := ts.recorded()[n].body, `{"flow":"login","account":"alice@example.com","ip":"203.0.113.7","outcome":"password_changed"}`; got != want {
		t.Errorf("Guard.PasswordChanged sent %s, want %s (the connection's address)", got, want)
	}
	ownerGetsIn(t, c)

	r.RemoteAddr = "not an address"
	before := len(ts.recorded())
	if err := g.PasswordChanged(r, alice); err == nil {
		t.Errorf("Guard.PasswordChanged with no usable address = nil, want an error")
	}
	if got := len(ts.recorded()); got != before {
		t.Errorf("Guard.PasswordChanged with no usable address made %d calls, want none", got-before)
	}
}

// tollgate being down or refusing the report is an error for the log, of
// the client's usual kinds, that names no identifier: the caller's
// password change itself goes on.
func TestClient_APasswordChangeWhileTollgateIsDownIsAnErrorToLog(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	url := down.URL
	down.Close()
	c := newClient(t, url, client.Config{Token: testToken})
	err := c.PasswordChanged(context.Background(), client.PasswordChange{Account: alice, IP: aliceIP})
	if !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("PasswordChanged with tollgate down = %v, want ErrUnavailable", err)
	}
	noSecrets(t, err)

	ts := startTollgate(t)
	c = newClient(t, ts.URL, client.Config{})
	err = c.PasswordChanged(context.Background(), client.PasswordChange{Flow: client.DefaultStepUpFlow, Account: alice, IP: aliceIP})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Type != wire.ProblemInvalidField || e.Field != "outcome" {
		t.Errorf("PasswordChanged on the step-up flow = %v, want a 400 invalid-field on outcome", err)
	}
	noSecrets(t, err)
}
