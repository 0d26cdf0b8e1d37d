package demologin_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// An unknown account and a known one with a wrong password get the same
// bytes, first as a wrong password and then, once each is delayed, as the
// same 429 page: the login never tells which accounts exist. No browser
// needed.
func TestLogin_UnknownAccountAnswersLikeWrongPassword(t *testing.T) {
	s := startStack(t)
	for i := 1; i <= 6; i++ {
		// A new password each time: a repeated one is counted once.
		guess := fmt.Sprintf("guess-%d", i)
		known := s.postLogin(t, fmt.Sprintf("198.51.100.%d", i), "alice", guess)
		unknown := s.postLogin(t, fmt.Sprintf("192.0.2.%d", i), "nobody", guess)
		wantStatus, wantText := http.StatusOK, textWrong
		if i == 6 { // past account_backoff's 5 free failures
			wantStatus, wantText = http.StatusTooManyRequests, "Too many attempts, try again in 1 second."
		}
		if known.status != wantStatus || !strings.Contains(known.body, wantText) {
			t.Errorf("attempt %d at alice: status %d, want %d and %q:\n%s", i, known.status, wantStatus, wantText, known.body)
		}
		if unknown.status != known.status || unknown.body != known.body ||
			unknown.header.Get("Retry-After") != known.header.Get("Retry-After") {
			t.Errorf("attempt %d: an unknown account got status %d, Retry-After %q, body\n%s\nalice got %d, %q,\n%s",
				i, unknown.status, unknown.header.Get("Retry-After"), unknown.body,
				known.status, known.header.Get("Retry-After"), known.body)
		}
	}
}
