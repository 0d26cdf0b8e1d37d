package challenge

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"testing"
	"time"
)

// fuzzChallenger is a Challenger for the fuzz targets' seeds.
func fuzzChallenger(f *testing.F) *Challenger {
	c, err := New(Config{Secret: []byte("0123456789abcdef0123456789abcdef"), Difficulty: 4,
		Now: func() time.Time { return time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC) }})
	if err != nil {
		f.Fatal(err)
	}
	return c
}

// FuzzParseToken: a token parses only in its one canonical form, and
// verifying any string never panics nor solves what was not signed.
func FuzzParseToken(f *testing.F) {
	c := fuzzChallenger(f)
	ch, err := c.Issue(f.Context(), IssueOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ch.Token)
	f.Add(ch.Token[:TokenLen-1] + "A")
	f.Add("")
	f.Add("AQEQAAABm47hV4A" + "================")
	f.Fuzz(func(t *testing.T, s string) {
		tok, raw, ok := parseToken(s)
		if !ok {
			return
		}
		if got := base64.RawURLEncoding.EncodeToString(raw); got != s {
			t.Fatalf("parseToken accepted %q, whose canonical form is %q", s, got)
		}
		if b := tok.body(); !bytes.Equal(b[:], raw[:tokenBody]) {
			t.Fatalf("the parsed token re-encodes to %x, not %x", b, raw[:tokenBody])
		}
		if r, err := c.Verify(t.Context(), "", "", Solution{Token: s, Nonce: "0"}); err != nil || (r.Solved && s != ch.Token) {
			t.Fatalf("Verify(%q) = %+v, %v", s, r, err)
		}
	})
}

// FuzzParseSolutionForm: a solution post parses only with one well-formed
// handle and a token, whatever else it holds.
func FuzzParseSolutionForm(f *testing.F) {
	f.Add("tollgate_handle=AAAAAAAAAAAAAAAAAAAAAA&tollgate_token=x&tollgate_nonce=12")
	f.Add("tollgate_handle=AAAAAAAAAAAAAAAAAAAAAA&tollgate_token=x&cf-turnstile-response=abc&tollgate_response=")
	f.Add("tollgate_handle=A&tollgate_handle=B")
	f.Add("%zz=1")
	f.Add(";;&&==")
	f.Fuzz(func(t *testing.T, body string) {
		p, ok := parseSolutionForm(body)
		if !ok {
			return
		}
		if !validHandle(p.handle) || p.token == "" {
			t.Fatalf("parseSolutionForm(%q) = %+v: accepted without a handle and a token", body, p)
		}
	})
}

// FuzzDecodeSubmission: what decodes encodes back to the same bytes.
func FuzzDecodeSubmission(f *testing.F) {
	b, _ := encodeSubmission(Submission{Method: "POST", Path: "/login?x=1", ContentType: "application/json", Body: []byte(`{"a":1}`)})
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte{4, 'P', 'O', 'S', 'T', 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSubmission(b)
		if err != nil {
			return
		}
		again, err := encodeSubmission(s)
		if err != nil {
			t.Fatalf("decodeSubmission(%x) = %+v, which does not encode: %v", b, s, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("decodeSubmission(%x) re-encodes to %x", b, again)
		}
	})
}

// FuzzParseNonce: a nonce parses only as the decimal form of its value.
func FuzzParseNonce(f *testing.F) {
	for _, s := range []string{"0", "00", "18446744073709551615", "18446744073709551616", "+1", "-0", "1e3", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := ParseNonce(s)
		if ok && strconv.FormatUint(n, 10) != s {
			t.Fatalf("ParseNonce(%q) = %d", s, n)
		}
	})
}

// FuzzParseSiteverify: only a JSON object whose success is true passes.
func FuzzParseSiteverify(f *testing.F) {
	for _, s := range []string{`{"success":true}`, `{"success":false}`, `{"success":"true"}`, `[true]`, `null`, `{"Success":true}`, `{"success":1}`, `<html>`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if parseSiteverify(b) != ReasonSolved {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%q passed but is no JSON object", b)
		}
		var yes bool
		for k, v := range m {
			if v == true && k == "success" {
				yes = true
			}
		}
		if !yes {
			t.Fatalf("%q passed without success true", b)
		}
	})
}
