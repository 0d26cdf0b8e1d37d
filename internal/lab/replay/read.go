package replay

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// Format is the format of an input file.
type Format uint8

const (
	// FormatTollgate is tollgate's own decision log (decisionlog.Line, one
	// JSON object a line): its identifiers are hashes already.
	FormatTollgate Format = iota + 1
	// FormatKeycloak is Keycloak's login events as JSON: an array of event
	// objects (the admin REST API's GET /admin/realms/{realm}/events) or
	// one event object a line.
	FormatKeycloak
	// FormatCSV is a CSV file with a header row, its columns named by a
	// Mapping.
	FormatCSV
)

var formatNames = [...]string{FormatTollgate: "tollgate", FormatKeycloak: "keycloak", FormatCSV: "csv"}

// String returns the format's name: "tollgate", "keycloak" or "csv".
func (f Format) String() string {
	if int(f) < len(formatNames) && formatNames[f] != "" {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ParseFormat returns the format named s ("tollgate", "keycloak" or
// "csv").
func ParseFormat(s string) (Format, error) {
	for f, name := range formatNames {
		if name != "" && name == s {
			return Format(f), nil
		}
	}
	return 0, fmt.Errorf("replay: unknown format %q (want tollgate, keycloak or csv)", s)
}

// Options says how Open reads a file.
type Options struct {
	// Format is the file's format. It is required.
	Format Format
	// Mapping names the columns of a CSV file (FormatCSV only, where it is
	// required).
	Mapping Mapping
	// Key is the HMAC key that raw identifiers of a Keycloak or CSV file
	// (accounts, addresses, fingerprints, devices) are hashed under as
	// they are read; the identifiers themselves are never kept. A replay
	// makes a random one per run, so that its keys mean nothing outside
	// it. At least 16 bytes are required for those formats; a tollgate
	// log, whose identifiers are hashes already, needs none.
	Key []byte
}

// Mapping names the columns of a CSV file. Time, Account, IP and Outcome
// are required; the others may be empty (no such column).
type Mapping struct {
	// Time, Account, IP, Outcome, Flow, Tenant, Device and Fingerprint are
	// column names of the header row. A row's flow is "login" and its
	// tenant "default" without (or with an empty) column.
	Time, Account, IP, Outcome, Flow, Tenant, Device, Fingerprint string
	// TimeLayout is how the time column is written: "rfc3339", "unix"
	// (seconds, with an optional decimal fraction), "unixms" (milliseconds)
	// or a Go time layout such as "2006-01-02 15:04:05" (UTC unless it has
	// a zone). The default is "rfc3339".
	TimeLayout string
	// Success and Failure are the outcome column's values that mean each,
	// matched without regard to case or surrounding space. The defaults
	// are success, ok, true and 1; and failure, fail, false, 0 and error.
	Success, Failure []string
}

var (
	defaultSuccess = []string{"success", "ok", "true", "1"}
	defaultFailure = []string{"failure", "fail", "false", "0", "error"}
)

// mappingKeys are ParseMapping's keys, in the order messages list them.
var mappingKeys = []string{"time", "account", "ip", "outcome", "flow", "tenant", "device", "fingerprint", "success", "failure", "time_layout"}

// ParseMapping parses a mapping written as comma-separated key=value pairs:
// "time=ts,account=user,ip=client_ip,outcome=result", and optionally
// flow=, tenant=, device=, fingerprint= (columns), success= and failure=
// (outcome values separated by "|": "success=ok|yes") and time_layout=
// (rfc3339, unix, unixms or a Go layout). In time_layout, a comma not
// followed by one of these keys and "=" belongs to the layout, so that
// "Mon, 02 Jan 2006 15:04:05 MST" needs no quoting.
func ParseMapping(s string) (Mapping, error) {
	var m Mapping
	seen := map[string]bool{}
	var pairs []string
	for part := range strings.SplitSeq(s, ",") {
		k, _, ok := strings.Cut(part, "=")
		known := ok && slices.Contains(mappingKeys, strings.TrimSpace(k))
		if !known && len(pairs) > 0 && strings.HasPrefix(strings.TrimSpace(pairs[len(pairs)-1]), "time_layout=") {
			pairs[len(pairs)-1] += "," + part
		} else {
			pairs = append(pairs, part)
		}
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || !slices.Contains(mappingKeys, k) {
			return Mapping{}, fmt.Errorf("replay: mapping: %q is not key=value with a key of %s", p, strings.Join(mappingKeys, ", "))
		}
		if seen[k] {
			return Mapping{}, fmt.Errorf("replay: mapping: %s is given twice", k)
		}
		seen[k] = true
		if v == "" {
			return Mapping{}, fmt.Errorf("replay: mapping: %s is empty", k)
		}
		switch k {
		case "time":
			m.Time = v
		case "account":
			m.Account = v
		case "ip":
			m.IP = v
		case "outcome":
			m.Outcome = v
		case "flow":
			m.Flow = v
		case "tenant":
			m.Tenant = v
		case "device":
			m.Device = v
		case "fingerprint":
			m.Fingerprint = v
		case "time_layout":
			m.TimeLayout = v
		case "success", "failure":
			var vals []string
			for o := range strings.SplitSeq(v, "|") {
				if o = strings.TrimSpace(o); o == "" {
					return Mapping{}, fmt.Errorf("replay: mapping: %s has an empty value", k)
				}
				vals = append(vals, o)
			}
			if k == "success" {
				m.Success = vals
			} else {
				m.Failure = vals
			}
		}
	}
	if err := m.validate(); err != nil {
		return Mapping{}, err
	}
	return m, nil
}

// validate checks that m names the required columns and that its layout
// and outcome values make sense.
func (m Mapping) validate() error {
	for _, c := range []struct{ key, col string }{{"time", m.Time}, {"account", m.Account}, {"ip", m.IP}, {"outcome", m.Outcome}} {
		if c.col == "" {
			return fmt.Errorf("replay: mapping: %s= is required (as in time=ts,account=user,ip=client_ip,outcome=result)", c.key)
		}
	}
	switch m.TimeLayout {
	case "", "rfc3339", "unix", "unixms":
	default:
		ref := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
		if s := ref.Format(m.TimeLayout); s == m.TimeLayout {
			return fmt.Errorf("replay: mapping: time_layout %q is not rfc3339, unix, unixms or a Go layout (such as 2006-01-02 15:04:05)", m.TimeLayout)
		}
	}
	succ, fail := m.outcomes()
	for _, s := range succ {
		for _, f := range fail {
			if strings.EqualFold(s, f) {
				return fmt.Errorf("replay: mapping: outcome %q is both a success and a failure", s)
			}
		}
	}
	return nil
}

// outcomes returns the success and failure values, defaults filled in.
func (m Mapping) outcomes() (success, failure []string) {
	success, failure = m.Success, m.Failure
	if len(success) == 0 {
		success = defaultSuccess
	}
	if len(failure) == 0 {
		failure = defaultFailure
	}
	return success, failure
}

// Open returns the events of the file called name (for messages) read from
// r in opts.Format. It streams: it holds one line (or one event, or one
// row) at a time, never the whole file.
//
// Open reads the file's first line, event or row, and returns an error —
// not a *LineError, since skipping it would skip the whole file — if it is
// not in the format, saying which format it looks like. Later lines that
// cannot be read are the Source's *LineErrors.
//
// The Source of a Keycloak file also has a method Skipped() int: the
// number of events so far that are not login attempts (types other than
// LOGIN and LOGIN_ERROR, and errors naming no user), which it skips.
func Open(name string, r io.Reader, opts Options) (Source, error) {
	switch opts.Format {
	case FormatTollgate:
		return openTollgate(name, r)
	case FormatKeycloak, FormatCSV:
		if len(opts.Key) < 16 {
			return nil, fmt.Errorf("replay: %s: -format %s needs a key of at least 16 bytes to hash identifiers with", name, opts.Format)
		}
		if opts.Format == FormatKeycloak {
			return openKeycloak(name, r, newIDHasher(opts.Key))
		}
		if err := opts.Mapping.validate(); err != nil {
			return nil, err
		}
		return openCSV(name, r, opts.Mapping, newIDHasher(opts.Key))
	}
	return nil, fmt.Errorf("replay: %s: no format given", name)
}

// maxLine bounds a line (or a Keycloak event, or a CSV row) in bytes.
const maxLine = 1 << 20

var errLongLine = errors.New("it is longer than 1 MiB")

// lineReader reads lines of at most maxLine bytes, counting them.
type lineReader struct {
	r    *bufio.Reader
	line int    // the number of the line last returned
	buf  []byte // a long line's bytes
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its line ending. A line longer than
// maxLine is skipped and returned as errLongLine; other errors are the
// reader's, io.EOF at the end. The line is valid until the next call.
func (lr *lineReader) next() ([]byte, error) {
	b, err := lr.r.ReadSlice('\n')
	if err == nil || (err == io.EOF && len(b) > 0) {
		lr.line++
		if lr.line == 1 {
			b = bytes.TrimPrefix(b, bom)
		}
		return bytes.TrimRight(b, "\r\n"), nil
	}
	if err != bufio.ErrBufferFull {
		return nil, err
	}
	lr.buf = append(lr.buf[:0], b...)
	long := false
	for {
		b, err = lr.r.ReadSlice('\n')
		if !long {
			if len(lr.buf)+len(b) > maxLine+2 {
				long = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, b...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		lr.line++
		if long {
			if cap(lr.buf) > 4*maxLine {
				lr.buf = nil
			}
			return nil, errLongLine
		}
		if lr.line == 1 {
			lr.buf = bytes.TrimPrefix(lr.buf, bom)
		}
		return bytes.TrimRight(lr.buf, "\r\n"), nil
	}
}

var bom = []byte("\xef\xbb\xbf")

// countingReader counts the bytes and lines read through it, and fails
// once more than max bytes are past mark: it bounds what a json.Decoder
// or csv.Reader buffers for one value.
type countingReader struct {
	r    io.Reader
	n    int64
	mark int64
	max  int64
	// nl are the offsets of the newlines read and not yet passed by
	// lineAt; lines is the number of those passed.
	nl    []int64
	lines int
}

func (c *countingReader) Read(p []byte) (int, error) {
	rem := c.max - (c.n - c.mark)
	if rem < 0 {
		return 0, errLongLine
	}
	if int64(len(p)) > rem+1 {
		p = p[:rem+1] // one more than max, to know it is over
	}
	n, err := c.r.Read(p)
	for i, b := range p[:n] {
		if b == '\n' {
			c.nl = append(c.nl, c.n+int64(i))
		}
	}
	c.n += int64(n)
	return n, err
}

// lineAt returns the number of the line of the byte at offset off. The
// offsets asked for must not decrease.
func (c *countingReader) lineAt(off int64) int {
	i := 0
	for i < len(c.nl) && c.nl[i] < off {
		i++
	}
	c.lines += i
	c.nl = append(c.nl[:0], c.nl[i:]...)
	return c.lines + 1
}

// idHasher hashes raw identifiers into opaque keys.
type idHasher struct {
	mac hash.Hash
	in  []byte
	sum []byte
}

func newIDHasher(key []byte) *idHasher { return &idHasher{mac: hmac.New(sha256.New, key)} }

// key returns the key of v of a kind ("account", "ip", ...): the HMAC of
// kind, a NUL byte and v, truncated to 16 bytes, in base64url.
func (h *idHasher) key(kind, v string) string {
	h.in = append(append(append(h.in[:0], kind...), 0), v...)
	h.mac.Reset()
	h.mac.Write(h.in)
	h.sum = h.mac.Sum(h.sum[:0])
	clear(h.in) // no copy of the identifier outlives the call
	return base64.RawURLEncoding.EncodeToString(h.sum[:16])
}

// account returns the key of an account identifier after
// authguard.NormalizeAccount. The error names field and never the
// identifier.
func (h *idHasher) account(field, s string) (string, error) {
	n, err := authguard.NormalizeAccount(s)
	if err != nil {
		if ie, ok := errors.AsType[*authguard.InputError](err); ok {
			return "", fmt.Errorf("%s %s", field, ie.Detail)
		}
		return "", fmt.Errorf("%s is not an account", field)
	}
	return h.key("account", n), nil
}

// ip returns the key of an address: an IPv4 address (also one a 6to4 or
// Teredo address embeds) as its /32, an IPv6 one as its /64, /56 and /48.
// The error names field and never the address.
func (h *idHasher) ip(field, s string) (IPKey, error) {
	a, err := spraydetect.ParseIP(s)
	if err != nil {
		return IPKey{}, fmt.Errorf("%s is not an IP address", field)
	}
	p := spraydetect.Grouping{IPv6Bits: 64}.Prefix(a)
	k := IPKey{V6: p.Addr().Is6(), P: h.key("ip", p.String())}
	if k.V6 {
		if w, ok := spraydetect.WidePrefix(a, 56); ok {
			k.P56 = h.key("ip", w.String())
		}
		if w, ok := spraydetect.WidePrefix(a, 48); ok {
			k.P48 = h.key("ip", w.String())
		}
	}
	return k, nil
}

var tenantName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// tenantOf returns s as a tollgate tenant name: lower-cased, with spaces
// and dots as underscores; "default" when that is not a tenant name.
func tenantOf(s string) string {
	if s == "" {
		return authguard.DefaultTenant
	}
	t := strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		case r == ' ' || r == '.':
			return '_'
		}
		return r
	}, s)
	if !tenantName.MatchString(t) {
		return authguard.DefaultTenant
	}
	return t
}

// guess names the format the first line of a file looks like, for the
// hint of a wrong-format error ("" when it cannot tell).
func guess(line []byte) Format {
	line = bytes.TrimSpace(bytes.TrimPrefix(line, bom))
	switch {
	case len(line) == 0:
		return 0
	case line[0] == '[':
		return FormatKeycloak
	case line[0] == '{':
		var keys map[string]json.RawMessage
		if json.Unmarshal(line, &keys) != nil {
			return 0
		}
		_, call := keys["call"]
		_, flow := keys["flow"]
		_, typ := keys["type"]
		_, realm := keys["realmId"]
		switch {
		case call && flow:
			return FormatTollgate
		case typ || realm:
			return FormatKeycloak
		}
		return 0
	case bytes.ContainsAny(line, ",;\t"):
		return FormatCSV
	}
	return 0
}

// wrongFormat is the error of a file whose first line, event or row at
// line is not a what of format f: err says why.
func wrongFormat(name string, line int, what string, f Format, first []byte, err error) error {
	hint := ""
	if g := guess(first); g != 0 && g != f {
		hint = fmt.Sprintf(" (is it -format %s?)", g)
	}
	return fmt.Errorf("%s:%d: not %s: %v%s", name, line, what, err, hint)
}

// clip quotes at most 40 bytes of s, for a message about a value that is
// not an identifier (a time, an outcome).
func clip(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q...", s[:40])
	}
	return fmt.Sprintf("%q", s)
}
