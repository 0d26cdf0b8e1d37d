package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// keycloakEvent is the part of a Keycloak event (EventRepresentation) that
// is read.
type keycloakEvent struct {
	Time          json.RawMessage `json:"time"` // epoch milliseconds
	Type          string          `json:"type"`
	OperationType string          `json:"operationType"` // an admin event's
	RealmID       string          `json:"realmId"`
	UserID        string          `json:"userId"`
	IPAddress     string          `json:"ipAddress"`
	Details       struct {
		Username string `json:"username"`
	} `json:"details"`
}

// newestFirstSlack is how far the second event of a file may be before the
// first before the file is taken to be newest first.
const newestFirstSlack = time.Minute

// keycloakSource reads Keycloak events, as a JSON array (arr) or one
// object a line (lr).
type keycloakSource struct {
	name string
	h    *idHasher

	lr *lineReader // the lines form

	arr     bool // the array form
	cr      *countingReader
	dec     *json.Decoder
	inArray bool
	raw     json.RawMessage
	index   int // the number of the element last read

	first    *Event // the first event, read by Open
	skipped  int
	timed    int // events whose time was seen, up to 2
	lastTime time.Time
}

func openKeycloak(name string, r io.Reader, h *idHasher) (Source, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	start, head := firstByte(br)
	s := &keycloakSource{name: name, h: h}
	switch start {
	case 0:
		s.lr = newLineReader(br)
		return s, nil // empty
	case '[':
		s.arr = true
		s.cr = &countingReader{r: br, max: maxLine}
		s.dec = json.NewDecoder(s.cr)
	case '{':
		s.lr = newLineReader(br)
	default:
		line, _, _ := bytes.Cut(head, []byte("\n"))
		return nil, wrongFormat(name, 1+bytes.Count(head[:bytes.IndexByte(head, start)], []byte("\n")), "a Keycloak event file", FormatKeycloak, line,
			errors.New("it is neither a JSON array of events nor a JSON object a line"))
	}
	raw, line, err := s.record()
	if err == io.EOF {
		return s, nil
	}
	var le *LineError
	if errors.As(err, &le) {
		return nil, wrongFormat(name, le.Line, "a Keycloak event", FormatKeycloak, nil, le.Err)
	}
	if err != nil {
		return nil, err
	}
	ev, ok, err := s.parse(raw)
	if err != nil {
		return nil, wrongFormat(name, line, "a Keycloak event", FormatKeycloak, raw, s.where(err))
	}
	s.checkOrder(ev.Time, line) // the first: never an error
	if ok {
		ev.File, ev.Line = name, line
		s.first = &ev
	}
	return s, nil
}

// firstByte returns the first byte of br that is not white space (or a
// byte order mark, which it discards), 0 if there is none, and the bytes
// up to it, without consuming them.
func firstByte(br *bufio.Reader) (byte, []byte) {
	if p, _ := br.Peek(3); bytes.Equal(p, bom) {
		br.Discard(3)
	}
	for n := 512; ; n *= 2 {
		p, err := br.Peek(n)
		if i := bytes.IndexFunc(p, func(r rune) bool { return r != ' ' && r != '\t' && r != '\r' && r != '\n' }); i >= 0 {
			return p[i], p
		}
		if err != nil {
			return 0, p
		}
	}
}

// Skipped is the number of events read so far that are not login
// attempts: of a type other than LOGIN and LOGIN_ERROR, or naming no user.
func (s *keycloakSource) Skipped() int { return s.skipped }

func (s *keycloakSource) Next() (Event, error) {
	if ev := s.first; ev != nil {
		s.first = nil
		return *ev, nil
	}
	for {
		raw, line, err := s.record()
		if err != nil {
			return Event{}, err
		}
		ev, ok, err := s.parse(raw)
		if err == nil {
			err = s.checkOrder(ev.Time, line)
		}
		if err != nil {
			var fatal *newestFirstError
			if errors.As(err, &fatal) {
				return Event{}, err
			}
			return Event{}, &LineError{File: s.name, Line: line, Err: s.where(err)}
		}
		if ok {
			ev.File, ev.Line = s.name, line
			return ev, nil
		}
	}
}

// where prefixes err with the element's index in the array form.
func (s *keycloakSource) where(err error) error {
	if s.arr {
		return fmt.Errorf("event %d: %w", s.index, err)
	}
	return err
}

// record returns the next event's JSON and the line it starts on, io.EOF
// at the end, or a *LineError for a line too long. An array that is not
// valid JSON cannot be read on: that error is not a *LineError.
func (s *keycloakSource) record() ([]byte, int, error) {
	if !s.arr {
		for {
			b, err := s.lr.next()
			if err == errLongLine {
				return nil, s.lr.line, &LineError{File: s.name, Line: s.lr.line, Err: err}
			}
			if err != nil {
				return nil, s.lr.line, err
			}
			if b = bytes.TrimSpace(b); len(b) > 0 {
				return b, s.lr.line, nil
			}
		}
	}
	for {
		s.cr.mark = s.dec.InputOffset()
		if !s.inArray {
			tok, err := s.dec.Token()
			if err == io.EOF {
				return nil, 0, io.EOF
			}
			if err != nil {
				return nil, 0, s.arrayError(err)
			}
			if tok != json.Delim('[') {
				return nil, 0, fmt.Errorf("%s:%d: after the array of events, want another array or the end", s.name, s.cr.lineAt(s.dec.InputOffset()-1))
			}
			s.inArray = true
			continue
		}
		if !s.dec.More() {
			if _, err := s.dec.Token(); err != nil {
				return nil, 0, s.arrayError(err)
			}
			s.inArray = false
			continue
		}
		if err := s.dec.Decode(&s.raw); err != nil {
			return nil, 0, s.arrayError(err)
		}
		s.index++
		return s.raw, s.cr.lineAt(s.dec.InputOffset() - int64(len(s.raw))), nil
	}
}

// arrayError is the error of an array that cannot be read on.
func (s *keycloakSource) arrayError(err error) error {
	var line int
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		line = s.cr.lineAt(s.dec.InputOffset() + se.Offset - 1)
	case err == io.ErrUnexpectedEOF:
		err = errors.New("the array of events ends early")
		line = s.cr.lineAt(s.cr.n - 1)
	default:
		line = s.cr.lineAt(s.valueStart())
	}
	return fmt.Errorf("%s:%d: event %d: %w (the file cannot be read on)", s.name, line, s.index+1, err)
}

// valueStart returns the offset of the next value of the array: past
// the white space and the comma the decoder has yet to read.
func (s *keycloakSource) valueStart() int64 {
	off := s.dec.InputOffset()
	r := s.dec.Buffered()
	var b [64]byte
	for {
		n, _ := r.Read(b[:])
		if n == 0 {
			return off
		}
		for _, c := range b[:n] {
			if c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != ',' {
				return off
			}
			off++
		}
	}
}

// newestFirstError is the error of a file whose events are newest first.
type newestFirstError struct{ msg string }

func (e *newestFirstError) Error() string { return e.msg }

// checkOrder fails a file whose second event is before its first: the
// admin REST API lists events newest first, and a replay reads them in
// time order.
func (s *keycloakSource) checkOrder(t time.Time, line int) error {
	if s.timed >= 2 {
		return nil
	}
	s.timed++
	if s.timed == 2 && t.Before(s.lastTime.Add(-newestFirstSlack)) {
		how := "reverse them (jq -c 'reverse[]')"
		if !s.arr {
			how = "reverse the lines (tac)"
		}
		return &newestFirstError{fmt.Sprintf("%s:%d: the events are newest first (this one is %s, the one before %s): %s to replay them in time order",
			s.name, line, t.UTC().Format(time.RFC3339), s.lastTime.UTC().Format(time.RFC3339), how)}
	}
	s.lastTime = t
	return nil
}

// parse reads one event. It reports false for one that is not a login
// attempt, which it counts as skipped.
func (s *keycloakSource) parse(b []byte) (Event, bool, error) {
	if len(b) == 0 || b[0] != '{' {
		return Event{}, false, errors.New("it is not a JSON object")
	}
	var k keycloakEvent
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(b, &k); err != nil {
		if !errors.As(err, &typeErr) {
			return Event{}, false, fmt.Errorf("it is not valid JSON: %v", err)
		}
	}
	if k.Type == "" && (typeErr == nil || typeErr.Field != "type") {
		if k.OperationType != "" {
			return Event{}, false, errors.New("it is an admin event (it has an \"operationType\"), not a login event")
		}
		return Event{}, false, errors.New("it has no \"type\"")
	}
	if len(k.Time) == 0 || string(k.Time) == "null" {
		return Event{}, false, errors.New("it has no \"time\"")
	}
	if typeErr != nil {
		return Event{}, false, typeError(typeErr)
	}
	ms, err := strconv.ParseInt(string(k.Time), 10, 64)
	if err != nil {
		raw := string(k.Time)
		if len(raw) > 40 {
			raw = raw[:40] + "..."
		}
		return Event{}, false, fmt.Errorf("\"time\" is %s, not a whole number of epoch milliseconds", raw)
	}
	ev := Event{Time: time.UnixMilli(ms).UTC(), Tenant: tenantOf(k.RealmID), Flow: "login", Call: CallAttempt}
	switch k.Type {
	case "LOGIN":
		ev.Outcome = OutcomeSuccess
	case "LOGIN_ERROR":
		ev.Outcome = OutcomeFailure
	default:
		s.skipped++
		return ev, false, nil
	}
	switch {
	case k.Details.Username != "":
		if ev.Account, err = s.h.account("details.username", k.Details.Username); err != nil {
			return Event{}, false, err
		}
	case k.UserID != "":
		ev.Account = s.h.key("userid", k.UserID)
	default:
		s.skipped++ // an error before any user was named
		return ev, false, nil
	}
	if k.IPAddress != "" {
		if ev.IP, err = s.h.ip("ipAddress", k.IPAddress); err != nil {
			return Event{}, false, err
		}
	}
	return ev, true, nil
}
