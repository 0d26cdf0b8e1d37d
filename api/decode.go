package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tollgate-auth/tollgate/authguard"
)

// MaxBodyBytes is the largest request body accepted; larger ones get 413.
// The largest valid body (every field at its cap) is about 2.7 KiB.
const MaxBodyBytes = 8 << 10

// checkBody is the wire form of POST /v1/check. Pointers tell absent (or
// null) from empty.
type checkBody struct {
	Flow                *string `json:"flow"`
	Account             *string `json:"account"`
	IP                  *string `json:"ip"`
	DeviceToken         *string `json:"device_token"`
	CaptchaSolved       *bool   `json:"captcha_solved"`
	PasswordFingerprint *string `json:"password_fingerprint"`
}

// checkFields are checkBody's keys, in wire order.
var checkFields = fields{
	{"flow", "a string"}, {"account", "a string"}, {"ip", "a string"},
	{"device_token", "a string"}, {"captcha_solved", "a boolean"},
	{"password_fingerprint", "a string"},
}

// request validates presence and returns the engine's request.
func (b *checkBody) request() (authguard.CheckRequest, error) {
	switch {
	case b.Flow == nil:
		return authguard.CheckRequest{}, missing("flow")
	case b.Account == nil:
		return authguard.CheckRequest{}, missing("account")
	case b.IP == nil:
		return authguard.CheckRequest{}, missing("ip")
	}
	return authguard.CheckRequest{
		Flow:                *b.Flow,
		Account:             *b.Account,
		IP:                  *b.IP,
		DeviceToken:         deref(b.DeviceToken),
		CaptchaSolved:       b.CaptchaSolved != nil && *b.CaptchaSolved,
		PasswordFingerprint: deref(b.PasswordFingerprint),
	}, nil
}

// reportBody is the wire form of POST /v1/report.
type reportBody struct {
	Flow                *string `json:"flow"`
	Account             *string `json:"account"`
	IP                  *string `json:"ip"`
	Outcome             *string `json:"outcome"`
	Attempt             *string `json:"attempt"`
	DeviceToken         *string `json:"device_token"`
	PasswordFingerprint *string `json:"password_fingerprint"`
}

var reportFields = fields{
	{"flow", "a string"}, {"account", "a string"}, {"ip", "a string"},
	{"outcome", "a string"}, {"attempt", "a string"}, {"device_token", "a string"},
	{"password_fingerprint", "a string"},
}

func (b *reportBody) request() (authguard.ReportRequest, error) {
	switch {
	case b.Flow == nil:
		return authguard.ReportRequest{}, missing("flow")
	case b.Account == nil:
		return authguard.ReportRequest{}, missing("account")
	case b.IP == nil:
		return authguard.ReportRequest{}, missing("ip")
	case b.Outcome == nil:
		return authguard.ReportRequest{}, missing("outcome")
	}
	outcome, err := authguard.ParseOutcome(*b.Outcome)
	if err != nil {
		return authguard.ReportRequest{}, err
	}
	return authguard.ReportRequest{
		Flow:                *b.Flow,
		Account:             *b.Account,
		IP:                  *b.IP,
		Outcome:             outcome,
		Attempt:             deref(b.Attempt),
		DeviceToken:         deref(b.DeviceToken),
		PasswordFingerprint: deref(b.PasswordFingerprint),
	}, nil
}

// missing is the problem of a required field that is absent or null.
func missing(name string) error {
	return newProblem(kindMissingField, name, "is required")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// field is one key of a request object and the JSON type it takes.
type field struct{ name, want string }

type fields []field

func (fs fields) index(key string) int {
	for i, f := range fs {
		if f.name == key {
			return i
		}
	}
	return -1
}

// checkContentType accepts application/json with, at most, a utf-8 charset
// and other parameters.
func checkContentType(r *http.Request) error {
	values := r.Header.Values("Content-Type")
	if len(values) != 1 {
		return newProblem(kindUnsupportedType, "", "the content type must be application/json")
	}
	mt, params, err := mime.ParseMediaType(values[0])
	if err != nil || mt != "application/json" {
		return newProblem(kindUnsupportedType, "", "the content type must be application/json")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return newProblem(kindUnsupportedType, "", "the body must be UTF-8 (charset=utf-8)")
	}
	return nil
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// decode reads r's body into v strictly (see the package doc). The body is
// read through http.MaxBytesReader, so a client cannot make it buffer more
// than MaxBodyBytes.
func decode(w http.ResponseWriter, r *http.Request, fs fields, v any) error {
	if err := checkContentType(r); err != nil {
		return err
	}
	if r.ContentLength > MaxBodyBytes {
		return newProblem(kindBodyTooLarge, "", "the body must be at most "+strconv.Itoa(MaxBodyBytes)+" bytes")
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 2*MaxBodyBytes {
			bufPool.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, MaxBodyBytes)); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return newProblem(kindMalformedJSON, "", "the body could not be read completely")
	}
	return decodeJSON(buf.Bytes(), fs, v)
}

// decodeJSON decodes one JSON object with exactly the keys fs names, each at
// most once, into v.
func decodeJSON(body []byte, fs fields, v any) error {
	if !utf8.Valid(body) {
		return newProblem(kindMalformedJSON, "", "the body must be UTF-8")
	}
	if err := walkObject(body, fs); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if i := fs.index(topKey(te.Field)); i >= 0 {
				return newProblem(kindInvalidField, fs[i].name, "must be "+fs[i].want)
			}
		}
		// walkObject has seen every key and the syntax: nothing else is
		// expected here.
		return newProblem(kindMalformedJSON, "", "the body does not match the request schema")
	}
	return nil
}

func topKey(path string) string {
	k, _, _ := strings.Cut(path, ".")
	return k
}

// keyRE is what an unknown key must look like to be named in a problem;
// other keys are not echoed back.
var keyRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// walkObject checks that body is one JSON object followed by nothing but
// white space, whose keys are all in fs and appear once each.
// encoding/json's struct decoding alone would take the last of two equal
// keys, match keys case-insensitively and accept trailing data.
func walkObject(body []byte, fs fields) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		return newProblem(kindMalformedJSON, "", "the body is empty; it must be a JSON object")
	}
	if err != nil {
		return syntaxProblem(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return newProblem(kindMalformedJSON, "", "the body must be a JSON object")
	}
	var seen uint64
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntaxProblem(err)
		}
		key, _ := tok.(string)
		i := fs.index(key)
		if i < 0 {
			if keyRE.MatchString(key) {
				return newProblem(kindUnknownField, key, "is not a field of this request (keys are case-sensitive)")
			}
			return newProblem(kindUnknownField, "", "the body has a key that is not a field of this request")
		}
		if seen&(1<<i) != 0 {
			return newProblem(kindDuplicateField, key, "appears more than once")
		}
		seen |= 1 << i
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return syntaxProblem(err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return syntaxProblem(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return newProblem(kindMalformedJSON, "", "the body has data after the JSON object")
	}
	return nil
}

func syntaxProblem(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return newProblem(kindMalformedJSON, "", "the body is not valid JSON (syntax error near byte "+strconv.FormatInt(se.Offset, 10)+")")
	}
	return newProblem(kindMalformedJSON, "", "the body is not valid JSON")
}
