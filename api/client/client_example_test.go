package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
)

// exampleTollgate serves tollgate's API on a memory store whose clock
// stands still, so that the examples' output is stable. In production the
// client's BaseURL is where `tollgate serve` listens.
func exampleTollgate() *httptest.Server {
	now := func() time.Time { return time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC) }
	engine, err := authguard.New(authguard.Config{
		Policy: builtinpolicy.Policy(),
		Store:  memstore.New(memstore.Config{Now: now}),
		Secret: []byte("example-secret-of-at-least-32-bytes"),
		Now:    now,
	})
	if err != nil {
		panic(err)
	}
	handler, err := api.New(api.Config{Engine: engine})
	if err != nil {
		panic(err)
	}
	return httptest.NewServer(handler)
}

func ExampleNew() {
	srv := exampleTollgate()
	defer srv.Close()

	tg, err := client.New(client.Config{
		BaseURL: srv.URL, // such as "http://127.0.0.1:8080"
		// With auth configured: Token, or a TokenSource that caches.
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := tg.Check(context.Background(),
		wire.CheckRequest{Flow: "login", Account: "alice@example.com", IP: "203.0.113.7"}, client.FailOpen)
	fmt.Println(v.Action, v.Attempt != "", err)
	// Output: proceed true <nil>
}

// A login handler: check before looking at the password, report after it,
// and answer a delay with 429 and Retry-After.
func ExampleClient_Check() {
	srv := exampleTollgate()
	defer srv.Close()
	tg, _ := client.New(client.Config{BaseURL: srv.URL})

	login := func(ctx context.Context, account, password, ip string) string {
		v, err := tg.Check(ctx, wire.CheckRequest{Flow: "login", Account: account, IP: ip}, client.FailOpen)
		if err != nil {
			fmt.Println("log: tollgate check:", err) // never the account or IP
		}
		switch v.Action {
		case wire.ActionDelay:
			return fmt.Sprintf("429 Too Many Requests, Retry-After: %d", v.RetryAfter)
		case wire.ActionCaptcha:
			return "show a CAPTCHA"
		}
		ok := password == "correct horse"
		outcome := wire.OutcomeFailure
		if ok {
			outcome = wire.OutcomeSuccess
		}
		// Report failures for unknown accounts exactly as for known ones.
		if _, err := tg.Report(ctx, wire.ReportRequest{Flow: "login", Account: account, IP: ip,
			Outcome: outcome, Attempt: v.Attempt}, client.FailOpen); err != nil {
			fmt.Println("log: tollgate report:", err)
		}
		if !ok {
			return "wrong account or password"
		}
		return "welcome"
	}

	for range 6 {
		fmt.Println(login(context.Background(), "alice@example.com", "guess", "203.0.113.7"))
	}
	// Output:
	// wrong account or password
	// wrong account or password
	// wrong account or password
	// wrong account or password
	// wrong account or password
	// 429 Too Many Requests, Retry-After: 1
}

// A success report returns a device token: keep it in a long-lived cookie
// (see DeviceCookie) and send it with the end user's later checks.
func ExampleClient_Report() {
	srv := exampleTollgate()
	defer srv.Close()
	tg, _ := client.New(client.Config{BaseURL: srv.URL})
	ctx := context.Background()

	check := wire.CheckRequest{Flow: "login", Account: "alice@example.com", IP: "203.0.113.7"}
	v, _ := tg.Check(ctx, check, client.FailOpen)
	// ... the password is right:
	r, err := tg.Report(ctx, wire.ReportRequest{Flow: "login", Account: check.Account, IP: check.IP,
		Outcome: wire.OutcomeSuccess, Attempt: v.Attempt}, client.FailOpen)
	fmt.Println(r.Action, r.DeviceToken != "", err)

	check.DeviceToken = r.DeviceToken // from the cookie, next time
	v, err = tg.Check(ctx, check, client.FailOpen)
	fmt.Println(v.Action, err)
	// Output:
	// proceed true <nil>
	// proceed <nil>
}

// Before sending a one-time code: send it on proceed only, and show the
// end user the same message whatever the verdict.
func ExampleClient_SendOTP() {
	srv := exampleTollgate()
	defer srv.Close()
	tg, _ := client.New(client.Config{BaseURL: srv.URL})

	v, err := tg.SendOTP(context.Background(), wire.SendRequest{
		Destination: "+44 7400 123456", Channel: wire.ChannelSMS, IP: "203.0.113.7",
	}, client.FailDelay) // an SMS costs money: do not send while tollgate is down
	if v.Action == wire.ActionProceed {
		fmt.Println("send the code")
	}
	fmt.Println("If this number can receive codes, one is on its way.", err)
	// Output:
	// send the code
	// If this number can receive codes, one is on its way. <nil>
}

// Each call site picks what it answers while tollgate is unreachable or
// slow; the error still says why, for the log.
func ExampleFailMode() {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	down := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more

	tg, _ := client.New(client.Config{BaseURL: down})
	ctx := context.Background()
	alice := wire.CheckRequest{Flow: "login", Account: "alice@example.com", IP: "203.0.113.7"}

	v, err := tg.Check(ctx, alice, client.FailOpen) // the login form stays open
	fmt.Println("login:", v.Action, v.Fallback, v.Reasons, errors.Is(err, client.ErrUnavailable))

	v, _ = tg.Check(ctx, alice, client.FailCaptcha) // a CAPTCHA stands in for tollgate
	fmt.Println("password reset:", v.Action)
	alice.CaptchaSolved = true
	v, _ = tg.Check(ctx, alice, client.FailCaptcha)
	fmt.Println("password reset, CAPTCHA solved:", v.Action)

	v, _ = tg.SendOTP(ctx, wire.SendRequest{Destination: "+44 7400 123456", Channel: wire.ChannelSMS, IP: "203.0.113.7"}, client.FailDelay)
	fmt.Println("SMS code:", v.Action, v.RetryAfter)

	// A tollgate that answers too late is a timeout, answered alike.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done() // until the client hangs up
	}))
	defer slow.Close()
	tg, _ = client.New(client.Config{BaseURL: slow.URL, Timeout: 20 * time.Millisecond})
	v, err = tg.Check(ctx, alice, client.FailOpen)
	fmt.Println("slow:", v.Action, v.Fallback, errors.Is(err, client.ErrTimeout))
	tg.CloseIdleConnections()
	// Output:
	// login: proceed true [client_fallback] true
	// password reset: captcha
	// password reset, CAPTCHA solved: proceed
	// SMS code: delay 1
	// slow: proceed true true
}

// A request tollgate refuses is an *Error with the problem's type and
// field; it never fails open.
func ExampleError() {
	srv := exampleTollgate()
	defer srv.Close()
	tg, _ := client.New(client.Config{BaseURL: srv.URL})

	v, err := tg.Check(context.Background(),
		wire.CheckRequest{Flow: "login", Account: "alice@example.com", IP: "fe80::1%eth0"}, client.FailOpen)
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Type, e.Field)
	}
	fmt.Println(v.Action, v.Fallback, errors.Is(err, client.ErrUnavailable))
	// Output:
	// 400 https://tollgate.dev/problems/invalid-field ip
	// delay true false
}
