package replay

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// csvColumn is a mapped column: its index in a row and how messages name
// it.
type csvColumn struct {
	i     int // -1: not mapped
	label string
}

// csvSource reads CSV rows.
type csvSource struct {
	name   string
	h      *idHasher
	cr     *countingReader
	cs     *csv.Reader
	fields int // the header's
	layout string
	succ   []string
	fail   []string

	time, account, ip, outcome, flow, tenant, device, fingerprint csvColumn

	first *Event // the first event, read by Open
}

var flowName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

func openCSV(name string, r io.Reader, m Mapping, h *idHasher) (Source, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	start, head := firstByte(br)
	if start == 0 {
		return nil, fmt.Errorf("%s: the file is empty: a CSV file starts with a header row", name)
	}
	if start == '{' || start == '[' {
		i := bytes.IndexByte(head, start)
		line, _, _ := bytes.Cut(head[i:], []byte("\n"))
		return nil, wrongFormat(name, 1+bytes.Count(head[:i], []byte("\n")), "a CSV file", FormatCSV, line, errors.New("it is JSON"))
	}
	s := &csvSource{name: name, h: h, layout: m.TimeLayout}
	if s.layout == "" {
		s.layout = "rfc3339"
	}
	s.succ, s.fail = m.outcomes()
	s.cr = &countingReader{r: br, max: maxLine}
	s.cs = csv.NewReader(s.cr)
	s.cs.FieldsPerRecord = -1
	s.cs.ReuseRecord = true
	header, err := s.cs.Read()
	if err != nil {
		return nil, s.openError(err, "a CSV header row")
	}
	s.fields = len(header)
	index := make(map[string]int, len(header))
	for i, c := range header {
		c = strings.TrimSpace(c)
		if _, dup := index[c]; !dup {
			index[c] = i
		}
	}
	line, _ := s.cs.FieldPos(0)
	var missing []string
	for _, c := range []struct {
		key, col string
		out      *csvColumn
	}{
		{"time", m.Time, &s.time}, {"account", m.Account, &s.account}, {"ip", m.IP, &s.ip}, {"outcome", m.Outcome, &s.outcome},
		{"flow", m.Flow, &s.flow}, {"tenant", m.Tenant, &s.tenant}, {"device", m.Device, &s.device}, {"fingerprint", m.Fingerprint, &s.fingerprint},
	} {
		*c.out = csvColumn{i: -1, label: fmt.Sprintf("column %q", c.col)}
		if c.col == "" {
			continue
		}
		i, ok := index[c.col]
		if !ok {
			missing = append(missing, fmt.Sprintf("%q (%s=)", c.col, c.key))
			continue
		}
		c.out.i = i
	}
	if len(missing) > 0 {
		cols := header
		if len(cols) > 20 {
			cols = cols[:20:20]
			cols = append(cols, "...")
		}
		hint := ""
		if len(header) == 1 && strings.ContainsAny(header[0], ";\t") {
			hint = " (only commas separate columns)"
		}
		word := "column"
		if len(missing) > 1 {
			word = "columns"
		}
		return nil, fmt.Errorf("%s:%d: the CSV header has no %s %s of the mapping; its columns are %s%s",
			name, line, word, strings.Join(missing, ", "), strings.Join(quoteAll(cols), ", "), hint)
	}
	ev, err := s.read()
	if err == io.EOF {
		return s, nil
	}
	var le *LineError
	if errors.As(err, &le) {
		return nil, wrongFormat(name, le.Line, "a CSV row of the mapping", FormatCSV, nil, le.Err)
	}
	if err != nil {
		return nil, err
	}
	s.first = &ev
	return s, nil
}

// openError is the error of a header row (or a first row) that cannot be
// read.
func (s *csvSource) openError(err error, what string) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return wrongFormat(s.name, pe.StartLine, what, FormatCSV, nil, pe.Err)
	}
	if err == io.EOF {
		return fmt.Errorf("%s: the file is empty: a CSV file starts with a header row", s.name)
	}
	return err
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		if s == "..." {
			out[i] = s
		} else {
			out[i] = clip(s)
		}
	}
	return out
}

func (s *csvSource) Next() (Event, error) {
	if ev := s.first; ev != nil {
		s.first = nil
		return *ev, nil
	}
	return s.read()
}

// read reads the next row.
func (s *csvSource) read() (Event, error) {
	s.cr.mark = s.cs.InputOffset()
	rec, err := s.cs.Read()
	if err == io.EOF {
		return Event{}, io.EOF
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return Event{}, &LineError{File: s.name, Line: pe.StartLine, Err: pe.Err}
	}
	if err != nil {
		return Event{}, fmt.Errorf("%s:%d: %w (the file cannot be read on)", s.name, s.cr.lineAt(s.cs.InputOffset()), err)
	}
	line, _ := s.cs.FieldPos(0)
	ev, err := s.parse(rec)
	if err != nil {
		return Event{}, &LineError{File: s.name, Line: line, Err: err}
	}
	ev.File, ev.Line = s.name, line
	return ev, nil
}

// parse reads one row.
func (s *csvSource) parse(rec []string) (Event, error) {
	if len(rec) != s.fields {
		return Event{}, fmt.Errorf("the row has %d fields, the header %d", len(rec), s.fields)
	}
	ev := Event{Tenant: tenantOf(""), Flow: "login", Call: CallAttempt}
	var err error
	if ev.Time, err = s.parseTime(strings.TrimSpace(rec[s.time.i])); err != nil {
		return Event{}, fmt.Errorf("%s: %w", s.time.label, err)
	}
	v := strings.TrimSpace(rec[s.outcome.i])
	switch {
	case containsFold(s.succ, v):
		ev.Outcome = OutcomeSuccess
	case containsFold(s.fail, v):
		ev.Outcome = OutcomeFailure
	default:
		return Event{}, fmt.Errorf("%s: %s is neither a success (%s) nor a failure (%s)", s.outcome.label, clip(v), strings.Join(s.succ, ", "), strings.Join(s.fail, ", "))
	}
	if ev.Account, err = s.h.account(s.account.label, rec[s.account.i]); err != nil {
		return Event{}, err
	}
	if v := strings.TrimSpace(rec[s.ip.i]); v != "" {
		if ev.IP, err = s.h.ip(s.ip.label, v); err != nil {
			return Event{}, err
		}
	}
	if c := s.flow; c.i >= 0 {
		if v := strings.TrimSpace(rec[c.i]); v != "" {
			if !flowName.MatchString(v) {
				return Event{}, fmt.Errorf("%s: %s is not a flow name (1 to 32 lower-case letters, digits and underscores, starting with a letter)", c.label, clip(v))
			}
			ev.Flow = v
		}
	}
	if c := s.tenant; c.i >= 0 {
		ev.Tenant = tenantOf(strings.TrimSpace(rec[c.i]))
	}
	if c := s.device; c.i >= 0 {
		if v := rec[c.i]; v != "" {
			ev.Device = s.h.key("device", v)
		}
	}
	if c := s.fingerprint; c.i >= 0 {
		if v := rec[c.i]; v != "" {
			ev.Fingerprint = s.h.key("fingerprint", v)
		}
	}
	return ev, nil
}

func containsFold(vals []string, v string) bool {
	for _, x := range vals {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}

// parseTime reads a time in the source's layout.
func (s *csvSource) parseTime(v string) (time.Time, error) {
	switch s.layout {
	case "rfc3339":
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s is not an RFC 3339 time (set time_layout= in the mapping for another)", clip(v))
		}
		return t, nil
	case "unix":
		sec, frac, _ := strings.Cut(v, ".")
		n, err := strconv.ParseInt(sec, 10, 64)
		ns := int64(0)
		if err == nil && frac != "" {
			if len(frac) > 9 || strings.Trim(frac, "0123456789") != "" {
				err = strconv.ErrSyntax
			} else {
				ns, err = strconv.ParseInt((frac + "000000000")[:9], 10, 64)
			}
		}
		if err != nil || n < 0 || n > 1<<40 {
			return time.Time{}, fmt.Errorf("%s is not a time in Unix seconds (time_layout=unix)", clip(v))
		}
		return time.Unix(n, ns).UTC(), nil
	case "unixms":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 1<<50 {
			return time.Time{}, fmt.Errorf("%s is not a time in Unix milliseconds (time_layout=unixms)", clip(v))
		}
		return time.UnixMilli(n).UTC(), nil
	}
	t, err := time.Parse(s.layout, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s is not a time in the layout %q", clip(v), s.layout)
	}
	return t, nil
}
