package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/tollgate-auth/tollgate/api/client"
)

// A step-up report carries its try's check's attempt token after the
// ticket, so that tollgate settles the failure that check charged.
func TestClient_ReportStepUpCarriesTheTrysAttemptAfterTheTicket(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		io.WriteString(w, `{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"","device_token":""}`)
	}))
	defer srv.Close()
	tc, err := client.New(client.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.ReportStepUp(context.Background(), client.StepUpReport{Account: "a", IP: "192.0.2.1",
		Ticket: "tk", Attempt: "at"}, client.FailDelay); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"flow":"step_up","account":"a","ip":"192.0.2.1","outcome":"step_up_failed","attempt":"tk,at"}`}
	if !equal(bodies, want) {
		t.Errorf("bodies\n%v\nwant\n%v", bodies, want)
	}
}

// On the real tollgate: the Guard settles each try's charge, so a wrong
// code counts once on the step_up flow. The built-in flow lets 3 wrong codes
// through at once and delays the 4th; a Guard that reported without its
// check's attempt token would have each counted twice (the check's charge
// and the report) and be delayed at the 3rd.
func TestGuardOnTollgate_EachWrongCodeCountsOnce(t *testing.T) {
	s := newEngineStepApp(t)
	b := s.browser()
	if got := b.post(t, bob(breachedPass)); b.cookies[client.StepUpCookieName] == "" {
		t.Fatalf("no step-up: %s", got)
	}
	for i := range 3 {
		if got := b.post(t, code("000000")); got.status != http.StatusOK || b.signedIn() {
			t.Fatalf("wrong code %d: %s; want the code page again", i+1, got)
		}
	}
	if got := b.post(t, code("000000")); got.status != http.StatusTooManyRequests {
		t.Errorf("the 4th wrong code: %s; want 429 (3 wrong codes at once, each counted once)", got)
	}
}
