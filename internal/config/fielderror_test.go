package config

import (
	"errors"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
)

// authguard says whether a field error's message is said of the field
// (FieldError.Predicate); config places the message by that, never by its
// first word, so a rewording in authguard cannot turn "attempt_ttl exceeds
// ..." into "attempt_ttl: exceeds ...". The golden file holds every
// message authguard says today.
func TestFieldError_ThePredicateFlagPlacesTheMessageNotItsFirstWord(t *testing.T) {
	tests := []struct {
		name string
		fe   *authguard.FieldError
		want string
	}{
		{"a predicate of a flow's field", &authguard.FieldError{Flow: "login", Field: "AttemptTTL", Err: errors.New("exceeds 24h"), Predicate: true},
			"flows.login: attempt_ttl exceeds 24h"},
		{"a sentence about a flow's field", &authguard.FieldError{Flow: "login", Field: "AttemptTTL", Err: errors.New("names of channels are lower-case"), Predicate: false},
			"flows.login: attempt_ttl: names of channels are lower-case"},
		{"a predicate of a rule's field", &authguard.FieldError{Flow: "login", Rule: "r", Field: "Cost", Err: errors.New("exceeds the limit (10)"), Predicate: true},
			"flows.login.rules[r]: cost exceeds the limit (10)"},
		{"a sentence about a rule's field", &authguard.FieldError{Flow: "login", Rule: "r", Field: "Cost", Err: errors.New("is what?"), Predicate: false},
			"flows.login.rules[r]: cost: is what?"},
		{"a predicate of a field the file has no name for", &authguard.FieldError{Flow: "login", Rule: "r", Field: "Backoff", Err: errors.New("exceeds a day"), Predicate: true},
			"flows.login.rules[r] exceeds a day"},
		{"a sentence about a field the file has no name for", &authguard.FieldError{Flow: "login", Rule: "r", Field: "Backoff", Err: errors.New("is a sentence here"), Predicate: false},
			"flows.login.rules[r]: is a sentence here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := policyfile.PolicyError(tt.fe)
			if got := err.Error(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			var fe *authguard.FieldError
			if !errors.As(err, &fe) || fe != tt.fe {
				t.Errorf("errors.As finds %v, want authguard's error beneath", fe)
			}
		})
	}
}
