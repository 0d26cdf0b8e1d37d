package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of Standard Webhooks.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// secretPrefix starts a Standard Webhooks secret: "whsec_" + base64 of the key.
const secretPrefix = "whsec_"

// MinSecretBytes is the shortest signing key New accepts for an endpoint.
const MinSecretBytes = 16

// Errors Verify returns, checked with errors.Is.
var (
	// ErrHeaders means a webhook header is missing or malformed.
	ErrHeaders = errors.New("webhook: missing or malformed webhook headers")
	// ErrTimestamp means webhook-timestamp is outside the tolerance: a
	// replayed (or badly clocked) delivery.
	ErrTimestamp = errors.New("webhook: timestamp outside tolerance")
	// ErrSignature means no v1 signature matches the body under the secret.
	ErrSignature = errors.New("webhook: no matching signature")
	// ErrSecret means a secret is not "whsec_" followed by standard base64.
	ErrSecret = errors.New("webhook: secret is not whsec_ + base64")
)

// DecodeSecret returns the key of a Standard Webhooks secret: the standard
// base64 after the "whsec_" prefix (a secret without the prefix is taken
// as the base64 itself, as the reference libraries do).
func DecodeSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil || len(key) == 0 {
		return nil, ErrSecret
	}
	return key, nil
}

// Sign returns the webhook-signature value "v1,<base64>" of one delivery:
// HMAC-SHA256 under the secret's key over "id.timestamp.body", timestamp in
// Unix seconds.
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := DecodeSecret(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, ts.Unix(), body)), nil
}

func mac(key []byte, id string, unix int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, unix, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// maxSignatures bounds how many space-separated signatures Verify looks at,
// so a huge header costs no more than a few HMAC comparisons.
const maxSignatures = 16

// Verify checks a received delivery the receiver's way: the three headers
// are present, webhook-timestamp is within ±tolerance of now (older is a
// replay: ErrTimestamp), and one of the space-separated "v1,<base64>"
// signatures in webhook-signature (several during a secret rotation) is the
// HMAC of "id.timestamp.body" under the secret (ErrSignature otherwise).
// Signatures are compared in constant time; other versions are skipped.
// Verify the body bytes as received, before any JSON parsing.
func Verify(secret string, h http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	key, err := DecodeSecret(secret)
	if err != nil {
		return err
	}
	id, unix, sigs, err := parseHeaders(h)
	if err != nil {
		return err
	}
	if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
		return ErrTimestamp
	}
	want := mac(key, id, unix, body)
	for i, s := range sigs {
		if i == maxSignatures {
			break
		}
		version, sig, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.Strict().DecodeString(sig) // one encoding per MAC
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrSignature
}

// parseHeaders reads the three Standard Webhooks headers: a non-empty id, a
// timestamp of decimal Unix seconds, and at least one signature.
func parseHeaders(h http.Header) (id string, unix int64, sigs []string, err error) {
	id = h.Get(HeaderID)
	ts := h.Get(HeaderTimestamp)
	sig := h.Get(HeaderSignature)
	if id == "" || ts == "" || sig == "" {
		return "", 0, nil, ErrHeaders
	}
	if len(ts) > 12 { // Unix seconds need 10 digits until 2286
		return "", 0, nil, fmt.Errorf("%w: timestamp", ErrHeaders)
	}
	for _, c := range ts {
		if c < '0' || c > '9' {
			return "", 0, nil, fmt.Errorf("%w: timestamp", ErrHeaders)
		}
	}
	unix, err = strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "", 0, nil, fmt.Errorf("%w: timestamp", ErrHeaders)
	}
	sigs = strings.Fields(sig)
	if len(sigs) == 0 {
		return "", 0, nil, ErrHeaders
	}
	return id, unix, sigs, nil
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
