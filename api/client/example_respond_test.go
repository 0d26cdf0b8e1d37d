package client_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
)

// printAnswer prints the status, the headers in order and the body.
func printAnswer(rec *httptest.ResponseRecorder) {
	res := rec.Result()
	fmt.Println(res.Status)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range res.Header {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		fmt.Printf("%s: %s\n", k, strings.Join(res.Header[k], ", "))
	}
	body, _ := io.ReadAll(res.Body)
	fmt.Printf("\n%s", body)
}

// A login handler: one check, then the Responder answers everything but a
// proceed.
func ExampleResponder() {
	rs, err := client.NewResponder(client.ResponderConfig{
		Policy: "login",
		Captcha: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/login/challenge", http.StatusSeeOther)
		}),
	})
	if err != nil {
		panic(err)
	}
	// check stands for client.Client.Check(ctx, req, mode), whose
	// Verdict holds the wire.Verdict Respond takes.
	check := func(r *http.Request) wire.Verdict {
		return wire.Verdict{Action: r.URL.Query().Get("verdict")}
	}
	login := func(w http.ResponseWriter, r *http.Request) {
		res := rs.Respond(w, r, check(r))
		if !res.Proceed {
			return // Respond answered
		}
		if res.Hold > 0 { // a queued call: wait its turn, unless the end user leaves
			t := time.NewTimer(res.Hold)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
		}
		// Check the password, report the outcome, answer.
		fmt.Fprintln(w, "password checked")
	}
	for _, action := range []string{"proceed", "captcha", "delay"} {
		rec := httptest.NewRecorder()
		login(rec, httptest.NewRequest(http.MethodPost, "/login?verdict="+action, nil))
		fmt.Println(action+":", rec.Code, strings.TrimSpace(rec.Header().Get("Location")+" "+rec.Body.String()))
	}
	// Output:
	// proceed: 200 password checked
	// captcha: 303 /login/challenge
	// delay: 429 {"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Try again in 1 second."}
}

// A delay of 2.5 s: 429, Retry-After and RateLimit in whole seconds, rounded
// up, and a problem document that says nothing about why.
func ExampleResponder_Respond() {
	var rs client.Responder // every default
	rec := httptest.NewRecorder()
	res := rs.Respond(rec, httptest.NewRequest(http.MethodPost, "/login", nil), wire.Verdict{
		Action: wire.ActionDelay, DelayMS: 2500, RetryAfter: 3, Reasons: []string{"account_backoff"},
	})
	fmt.Println("proceed:", res.Proceed)
	printAnswer(rec)
	// Output:
	// proceed: false
	// 429 Too Many Requests
	// Cache-Control: no-store
	// Content-Length: 99
	// Content-Type: application/problem+json
	// Ratelimit: "login";r=0;t=3
	// Retry-After: 3
	//
	// {"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Try again in 3 seconds."}
}

// A proceed that a leaky_bucket rule queued: Respond writes nothing and says
// how long to hold the call.
func ExampleResponder_Respond_queued() {
	var rs client.Responder
	rec := httptest.NewRecorder()
	res := rs.Respond(rec, httptest.NewRequest(http.MethodPost, "/login", nil), wire.Verdict{
		Action: wire.ActionProceed, DelayMS: 1500, RetryAfter: 2, Attempt: "AQAAAABr",
	})
	fmt.Println("proceed:", res.Proceed, "hold:", res.Hold, "written:", rec.Body.Len())
	// Output:
	// proceed: true hold: 1.5s written: 0
}

// A send flow answers a refused send exactly as a sent one.
func ExampleResponder_Accept() {
	rs, err := client.NewResponder(client.ResponderConfig{
		Policy: "otp_send",
		Accepted: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(w, "If this number can receive codes, one is on its way.")
		}),
	})
	if err != nil {
		panic(err)
	}
	send := func(w http.ResponseWriter, r *http.Request, v wire.Verdict) {
		if !rs.Respond(w, r, v).Proceed {
			return // delay, captcha, or deny: answered as if sent
		}
		// Queue the code for sending, then:
		rs.Accept(w, r)
	}
	for _, v := range []wire.Verdict{
		{Action: wire.ActionProceed},
		{Action: wire.ActionDeny, Reasons: []string{"number_type"}},
	} {
		rec := httptest.NewRecorder()
		send(rec, httptest.NewRequest(http.MethodPost, "/otp", nil), v)
		fmt.Print(v.Action, ": ", rec.Code, " ", rec.Body.String())
	}
	// Output:
	// proceed: 200 If this number can receive codes, one is on its way.
	// deny: 200 If this number can receive codes, one is on its way.
}

// Your own page for a delay: Respond sets the status fields, Delay writes
// the page from the wait alone.
func ExampleResponderConfig_delay() {
	rs, err := client.NewResponder(client.ResponderConfig{
		Delay: func(w http.ResponseWriter, r *http.Request, seconds int) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, "<p>Too many attempts: try again in %d seconds.</p>\n", seconds)
		},
	})
	if err != nil {
		panic(err)
	}
	rec := httptest.NewRecorder()
	rs.Respond(rec, httptest.NewRequest("POST", "/login", nil), wire.Verdict{Action: wire.ActionDelay, DelayMS: 7200, RetryAfter: 8})
	printAnswer(rec)
	// Output:
	// 429 Too Many Requests
	// Cache-Control: no-store
	// Content-Type: text/html; charset=utf-8
	// Ratelimit: "login";r=0;t=8
	// Retry-After: 8
	//
	// <p>Too many attempts: try again in 8 seconds.</p>
}
