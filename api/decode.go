package api

import (
	"bytes"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
)

// MaxBodyBytes is the largest request body accepted; larger ones get 413.
// The largest valid body (every field at its cap) is about 3.3 KiB.
const MaxBodyBytes = 8 << 10

// checkBody is the wire form of POST /v1/check, shared with the Go client.
// Which keys were present and which were null is known from decodeJSON,
// so fields are plain values: null leaves them at their zero value.
type checkBody = wire.CheckRequest

// checkFields are checkBody's keys, in wire order, with the required ones
// marked. Account and ip are required by the flows whose rules count them,
// which the engine checks.
var checkFields = fields{
	{"flow", "a string", true}, {"account", "a string", false}, {"ip", "a string", false},
	{"device_token", "a string", false}, {"captcha_solved", "a boolean", false},
	{"password_fingerprint", "a string", false}, {"destination", "a string", false},
	{"channel", "a string", false}, {"ref", "a string", false},
}

// checkRequest is the engine's form of a check body.
func checkRequest(b *checkBody) authguard.CheckRequest {
	return authguard.CheckRequest{
		Flow:                b.Flow,
		Account:             b.Account,
		IP:                  b.IP,
		DeviceToken:         b.DeviceToken,
		CaptchaSolved:       b.CaptchaSolved,
		PasswordFingerprint: b.PasswordFingerprint,
		Destination:         b.Destination,
		Channel:             b.Channel,
		Ref:                 b.Ref,
	}
}

// reportBody is the wire form of POST /v1/report, shared with the Go
// client.
type reportBody = wire.ReportRequest

var reportFields = fields{
	{"flow", "a string", true}, {"account", "a string", false}, {"ip", "a string", false},
	{"outcome", "a string", true}, {"attempt", "a string", false},
	{"device_token", "a string", false}, {"password_fingerprint", "a string", false},
	{"destination", "a string", false}, {"channel", "a string", false}, {"ref", "a string", false},
	{"breached", "a boolean", false},
}

// reportRequest is the engine's form of a report body; the outcome must be
// one the engine knows.
func reportRequest(b *reportBody) (authguard.ReportRequest, error) {
	outcome, err := authguard.ParseOutcome(b.Outcome)
	if err != nil {
		return authguard.ReportRequest{}, err
	}
	return authguard.ReportRequest{
		Flow:                b.Flow,
		Account:             b.Account,
		IP:                  b.IP,
		Outcome:             outcome,
		Attempt:             b.Attempt,
		DeviceToken:         b.DeviceToken,
		PasswordFingerprint: b.PasswordFingerprint,
		Destination:         b.Destination,
		Channel:             b.Channel,
		Ref:                 b.Ref,
		Breached:            b.Breached,
	}, nil
}

// sendBody is the wire form of POST /v1/otp/send, shared with the Go
// client.
type sendBody = wire.SendRequest

// sendFields are sendBody's keys. Flow defaults to "otp_send"; destination
// and channel are required, which the engine checks (so that a missing one
// and an empty one get the same answer); ip is required by the flows whose
// rules count it.
var sendFields = fields{
	{"flow", "a string", false}, {"destination", "a string", false}, {"channel", "a string", false},
	{"ip", "a string", false}, {"account", "a string", false}, {"device_token", "a string", false},
	{"captcha_solved", "a boolean", false}, {"ref", "a string", false},
}

// sendRequest is the engine's form of a send body.
func sendRequest(b *sendBody) authguard.SendRequest {
	return authguard.SendRequest{
		Flow:          b.Flow,
		Destination:   b.Destination,
		Channel:       b.Channel,
		IP:            b.IP,
		Account:       b.Account,
		DeviceToken:   b.DeviceToken,
		CaptchaSolved: b.CaptchaSolved,
		Ref:           b.Ref,
	}
}

// field is one member of a request object: its name, the JSON type it
// takes (for a problem's detail) and whether it is required. A route's
// fields are its request's schema, beside the Go type it decodes into: the
// library refuses a member the type has no field for, decodeJSON one the
// fields do not list, and the decode tests hold the two to each other.
type field struct {
	name     string
	want     string
	required bool
}

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
	if values[0] == "application/json" {
		return nil // what clients send, and what the parse below accepts: without its map
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

// checkContentEncoding accepts a body with no content coding: no
// Content-Encoding, or only "identity". tollgate decodes no coding, and a
// body read as plain that claims one may not be what the caller meant.
func checkContentEncoding(r *http.Request) error {
	for _, v := range r.Header.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return newProblem(kindUnsupportedType, "", "the body must not be encoded (Content-Encoding: identity or none)")
			}
		}
	}
	return nil
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// decode reads r's body into v strictly (see the package doc). The body is
// read through http.MaxBytesReader, so a client cannot make it buffer more
// than MaxBodyBytes.
func decode(w http.ResponseWriter, r *http.Request, fs fields, v any) error {
	_, err := decodePresent(w, r, fs, v)
	return err
}

// decodePresent is decode that also returns the set of fs's keys present
// with a non-null value (bit i for fs[i]): where "" and an absent key
// differ.
func decodePresent(w http.ResponseWriter, r *http.Request, fs fields, v any) (present uint64, err error) {
	if err := checkContentType(r); err != nil {
		return 0, err
	}
	if err := checkContentEncoding(r); err != nil {
		// RFC 9110, section 15.5.16: say which codings would do.
		w.Header().Set("Accept-Encoding", "identity")
		return 0, err
	}
	if r.ContentLength > MaxBodyBytes {
		return 0, newProblem(kindBodyTooLarge, "", "the body must be at most "+strconv.Itoa(MaxBodyBytes)+" bytes")
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
			return 0, err
		}
		return 0, newProblem(kindMalformedJSON, "", "the body could not be read completely")
	}
	return decodeJSON(buf.Bytes(), fs, v)
}

// unknownKey is the problem of an unknown key in a body or a query: it
// names the key (detail named) only when it is, in some case, a field name
// of one of the API's requests (a field sent to the wrong route, "Flow" for
// "flow"). Any other key may be a submitted value put where a key goes (an
// e-mail address, an IP address, a phone number) and is not echoed back
// (detail unnamed).
func unknownKey(key, named, unnamed string) *problemError {
	for _, fs := range allFields {
		for _, f := range fs {
			if strings.EqualFold(key, f.name) {
				return newProblem(kindUnknownField, key, named)
			}
		}
	}
	return newProblem(kindUnknownField, "", unnamed)
}

// allFields are the keys of every request the API decodes.
var allFields = []fields{
	checkFields, reportFields, sendFields, explainFields, resetFields, denyFields, removeFields,
}
