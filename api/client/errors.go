package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// ErrUnavailable matches (errors.Is) every error of a call that tollgate
// could not answer: it is unreachable (connection refused or reset, no such
// host), it did not answer in time (ErrTimeout), it shed the call (503
// overloaded, with Retry-After), it or a proxy in front of it failed (any
// 5xx, or a 429 from a proxy), its answer was not what the call expects, or
// the token source gave no token. The call site's FailMode answers these.
var ErrUnavailable = errors.New("client: tollgate unavailable")

// ErrTimeout matches (errors.Is) the error of a call that ran out of time:
// past Config.Timeout or the context's deadline, whether connecting,
// waiting for the answer or reading it. Every error that matches ErrTimeout
// also matches ErrUnavailable.
var ErrTimeout error = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string { return "client: tollgate did not answer in time" }

// Is makes a timeout a kind of unavailability.
func (timeoutError) Is(target error) bool { return target == ErrUnavailable }

// Error is an answer other than 200 from tollgate (or from whatever answers
// at its address): a problem+json document, whose members it carries, or
// another body, which it ignores.
//
// Its message holds the call, the status, the problem type's last segment
// and tollgate's detail, which never repeats a submitted value; a detail
// from anything but tollgate is left out.
//
// errors.Is(err, ErrUnavailable) is true for a 5xx (such as 503
// overloaded) and a 429; a 4xx other than 429 means the request or its
// token was refused, and no FailMode waves it through.
type Error struct {
	// Op is the call: "check", "report", "send", the challenge calls
	// ("challenge", "challenge-verify", "challenge-solver"), or the admin
	// call's name ("explain", "reset", "allow", "deny", "entries",
	// "remove", "reload", "dead-letters", "replay").
	Op string
	// Status is the HTTP status code.
	Status int
	// Type is the problem type URI, one of the wire.Problem constants for
	// tollgate's problems; empty when the answer was not problem+json.
	Type string
	// Title is the problem's title, or the status text when the answer was
	// not problem+json.
	Title string
	// Detail is the problem's detail, for the caller's developer.
	Detail string
	// Field is, on a 400, the request field at fault, such as "ip".
	Field string
	// RequestID is the request's id in tollgate's log (the X-Request-Id
	// tollgate answered with).
	RequestID string
	// RetryAfter is the delay the Retry-After header asked for (a 503
	// overloaded carries one), or 0.
	RetryAfter time.Duration
}

// Error describes the answer without any request field's value.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("client: ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(e.Status))
	if slug, ok := strings.CutPrefix(e.Type, wire.ProblemBase); ok {
		b.WriteString(" ")
		b.WriteString(slug)
		if e.Detail != "" {
			b.WriteString(": ")
			b.WriteString(e.Detail)
		}
	} else {
		b.WriteString(" ")
		b.WriteString(e.Title)
	}
	if e.RequestID != "" {
		b.WriteString(" (request id ")
		b.WriteString(e.RequestID)
		b.WriteString(")")
	}
	return b.String()
}

// Is reports whether e is an unavailability: a 5xx or a 429.
func (e *Error) Is(target error) bool {
	return target == ErrUnavailable && (e.Status >= 500 || e.Status == http.StatusTooManyRequests)
}

// callError is a call that got no answer from tollgate, or none it could
// use.
type callError struct {
	op   string
	kind error // ErrUnavailable, ErrTimeout, or nil for a canceled call
	msg  string
	err  error // the cause, if any
}

func (e *callError) Error() string {
	s := "client: " + e.op + ": " + e.msg
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	return s
}

func (e *callError) Unwrap() []error {
	var errs []error
	if e.kind != nil {
		errs = append(errs, e.kind)
	}
	if e.err != nil {
		errs = append(errs, e.err)
	}
	return errs
}

// transportError classifies err, which a call under ctx met before it had
// an answer: a timeout, the caller's cancellation, or unavailability. The
// cause is kept: it names tollgate's address, never a request field.
func transportError(ctx context.Context, op, msg string, err error) error {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()):
		return &callError{op: op, kind: ErrTimeout, msg: "tollgate did not answer in time", err: err}
	case errors.Is(ctx.Err(), context.Canceled):
		return &callError{op: op, msg: "the call was canceled", err: err}
	}
	return &callError{op: op, kind: ErrUnavailable, msg: msg, err: err}
}
