package authguard

import (
	"fmt"
	"time"
)

// FieldError is a field of a flow, or of one of its rules, that is not
// valid. Field names the Go field, from the Flow or the Rule:
// "FailClosedRetry", "Send.Prices[sms].Default", "Cost". Err says what is
// wrong without naming the field, either of the field ("must be between
// 100ms and 1m0s, not 0s", Predicate) or in a sentence of its own (`"fax"
// is not a channel`). A mistake about how a rule's fields go together is a
// RuleError instead.
type FieldError struct {
	// Flow is the flow's Name.
	Flow string
	// Rule is the rule's Name (its index when it has none), or "" for a
	// field of the flow itself.
	Rule string
	// Field is the field's Go name, a path for a nested one.
	Field string
	Err   error
	// Predicate says that Err is said of the field and reads after its
	// name, as in "Cost must be between 1 and limit (10), not 0"; when
	// false, Err is a sentence of its own, to be set apart from the name
	// ("Send.Prices: 9 is not a channel"). Whoever words the error for
	// people (config, in the file's keys) reads it here, never from Err's
	// words.
	Predicate bool
}

func (e *FieldError) Error() string {
	if e.Rule == "" {
		return fmt.Sprintf("authguard: flow %s: %s: %v", e.Flow, e.Field, e.Err)
	}
	return fmt.Sprintf("authguard: flow %s, rule %s: %s: %v", e.Flow, e.Rule, e.Field, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// RuleError is a flow's rule that is not valid as a whole: fields that do
// not go together, or a rule that clashes with another. Err says why.
type RuleError struct {
	Flow, Rule string
	Err        error
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("authguard: flow %s, rule %s: %v", e.Flow, e.Rule, e.Err)
}

func (e *RuleError) Unwrap() error { return e.Err }

// The defaults of a Flow's zero fields (and of its SendPolicy's), the same
// as a new flow of a config file has.
const (
	DefaultFailClosedRetry = 2 * time.Second
	DefaultAttemptTTL      = 10 * time.Minute
	DefaultDeviceTokenTTL  = 90 * 24 * time.Hour
	DefaultPrefixDigits    = 3
)

// The bounds of a Flow's durations. A zero FailClosedRetry, AttemptTTL or
// DeviceTokenTTL is its default; a zero SamePasswordWindow remembers no
// passwords.
const (
	MinFailClosedRetry, MaxFailClosedRetry = 100 * time.Millisecond, time.Minute
	MaxSamePasswordWindow                  = 30 * 24 * time.Hour
	MinAttemptTTL, MaxAttemptTTL           = time.Second, 24 * time.Hour
	MinDeviceTokenTTL, MaxDeviceTokenTTL   = time.Hour, 400 * 24 * time.Hour
)

// fieldErr is a rule's or a flow's field error before it knows its flow
// and rule; predicate is FieldError's Predicate.
type fieldErr struct {
	field     string
	err       error
	predicate bool
}

func (e *fieldErr) Error() string { return e.field + ": " + e.err.Error() }

// bad is a field error of the field named whose format says something of
// the field: "must be ...", "is required".
func bad(field string, format string, args ...any) error {
	return &fieldErr{field, fmt.Errorf(format, args...), true}
}

// badSentence is a field error of the field named whose format is a
// sentence of its own: "%q is not a channel".
func badSentence(field string, format string, args ...any) error {
	return &fieldErr{field, fmt.Errorf(format, args...), false}
}

// badErr is the field error err of the field named, another package's
// sentence.
func badErr(field string, err error) error { return &fieldErr{field, err, false} }
