package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/decisionlog"
)

// tollgateLine is a decisionlog.Line with its time as the text, so that a
// time that is not RFC 3339 is reported as such.
type tollgateLine struct {
	decisionlog.Line
	Time string `json:"time"`
}

// tollgateSource reads a decision log.
type tollgateSource struct {
	name  string
	lr    *lineReader
	first *Event // the first event, read by Open
}

func openTollgate(name string, r io.Reader) (Source, error) {
	s := &tollgateSource{name: name, lr: newLineReader(r)}
	for {
		b, err := s.lr.next()
		if err == io.EOF {
			return s, nil
		}
		if err == errLongLine {
			return nil, wrongFormat(name, s.lr.line, "a tollgate decision log line", FormatTollgate, nil, err)
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		ev, err := parseTollgate(b)
		if err != nil {
			return nil, wrongFormat(name, s.lr.line, "a tollgate decision log line", FormatTollgate, b, err)
		}
		ev.File, ev.Line = name, s.lr.line
		s.first = &ev
		return s, nil
	}
}

func (s *tollgateSource) Next() (Event, error) {
	if ev := s.first; ev != nil {
		s.first = nil
		return *ev, nil
	}
	for {
		b, err := s.lr.next()
		if err == errLongLine {
			return Event{}, &LineError{File: s.name, Line: s.lr.line, Err: err}
		}
		if err != nil {
			return Event{}, err
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		ev, err := parseTollgate(b)
		if err != nil {
			return Event{}, &LineError{File: s.name, Line: s.lr.line, Err: err}
		}
		ev.File, ev.Line = s.name, s.lr.line
		return ev, nil
	}
}

// parseTollgate reads one decision log line. Keys it does not know are
// ignored, for logs of later versions.
func parseTollgate(b []byte) (Event, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return Event{}, errors.New("it is not a JSON object")
	}
	var l tollgateLine
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(b, &l); err != nil {
		if !errors.As(err, &typeErr) {
			return Event{}, fmt.Errorf("it is not valid JSON: %v", err)
		}
		typeErr.Field = strings.TrimPrefix(typeErr.Field, "Line.") // the embedded decisionlog.Line
	}
	for _, f := range []struct{ key, v string }{{"call", l.Call}, {"flow", l.Flow}, {"time", l.Time}} {
		if f.v == "" && (typeErr == nil || typeErr.Field != f.key) {
			return Event{}, fmt.Errorf("it has no %q", f.key)
		}
	}
	if typeErr != nil {
		return Event{}, typeError(typeErr)
	}
	t, err := time.Parse(time.RFC3339Nano, l.Time)
	if err != nil {
		return Event{}, fmt.Errorf("\"time\" %s is not an RFC 3339 time", clip(l.Time))
	}
	ev := Event{
		Time: t, Tenant: l.Tenant, Flow: l.Flow,
		Account: l.Account, Fingerprint: l.Fingerprint,
		IP:     IPKey{V6: l.IPv6, P: l.IP, P56: l.IP56, P48: l.IP48},
		Device: l.Device, Issued: l.Issued, Attempt: l.Attempt,
		Action: l.Computed, DelayMS: l.ComputedDelayMS, Reasons: l.ComputedReasons,
	}
	if ev.Tenant == "" {
		ev.Tenant = authguard.DefaultTenant
	}
	if ev.Action == "" || (ev.Action == l.Action && ev.DelayMS == 0) {
		// enforce mode: the verdict computed is the one answered, whose
		// delay the line always has
		ev.Action, ev.DelayMS, ev.Reasons = l.Action, l.DelayMS, l.Reasons
	}
	switch l.Call {
	case "check":
		ev.Call = CallCheck
	case "report":
		ev.Call = CallReport
	case "send":
		ev.Call = CallSend
	default:
		return Event{}, fmt.Errorf("\"call\" %s is not check, report or send", clip(l.Call))
	}
	switch l.Outcome {
	case "":
		if ev.Call == CallReport {
			return Event{}, errors.New("it is a report without an \"outcome\"")
		}
	case "failure":
		ev.Outcome = OutcomeFailure
	case "success":
		ev.Outcome = OutcomeSuccess
	case "step_up_passed":
		ev.Outcome = OutcomeStepUpPassed
	case "step_up_failed":
		ev.Outcome = OutcomeStepUpFailed
	case "password_changed":
		ev.Outcome = OutcomePasswordChanged
	default:
		return Event{}, fmt.Errorf("\"outcome\" %s is not failure, success, step_up_passed, step_up_failed or password_changed", clip(l.Outcome))
	}
	if ev.Outcome != OutcomeNone && ev.Call != CallReport {
		return Event{}, fmt.Errorf("it is a %s with an \"outcome\"", l.Call)
	}
	return ev, nil
}

// typeError says which key of a JSON object has a value of the wrong kind.
func typeError(e *json.UnmarshalTypeError) error {
	return fmt.Errorf("%q is a JSON %s, want %s", e.Field, e.Value, e.Type)
}
