package client

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The event types tollgate posts to webhook endpoints (WebhookEvent.Type).
// A later tollgate may post others: handle the ones you know and answer
// 2xx to the rest.
const (
	// WebhookLoginNewDevice: a login succeeded without a valid device
	// token of the account (the "was this you?" notice).
	WebhookLoginNewDevice = "login.new_device"
	// WebhookAccountUnderAttack: the account's failures put it in backoff
	// or passed the flow's threshold (one per account per window).
	WebhookAccountUnderAttack = "account.under_attack"
	// WebhookAccountReset: an admin reset the account's state.
	WebhookAccountReset = "account.reset"
	// WebhookIPEscalated: an address or prefix reached a CAPTCHA rule.
	WebhookIPEscalated = "ip.escalated"
	// WebhookOTPPumpingHold: a country or number block is held for low
	// conversion (SMS pumping).
	WebhookOTPPumpingHold = "otp.pumping_hold"
	// WebhookOTPBudget: the one-time-code spend passed its CAPTCHA or deny
	// level.
	WebhookOTPBudget = "otp.budget"
	// WebhookStoreDegraded: tollgate lost its store and answers from its
	// fallback.
	WebhookStoreDegraded = "store.degraded"
	// WebhookStoreRecovered: the store is back.
	WebhookStoreRecovered = "store.recovered"
)

// DefaultWebhookTolerance is how far a webhook's timestamp may be from now,
// either way, before VerifyWebhook refuses it as a replay: 5 minutes, as
// Standard Webhooks recommends.
const DefaultWebhookTolerance = 5 * time.Minute

// The errors of VerifyWebhook, each checked with errors.Is. Answer a
// request that fails with any of them 400 and do not act on it; only
// ErrWebhookSecret is your configuration's fault rather than the sender's.
var (
	// ErrWebhookHeaders: webhook-id, webhook-timestamp or
	// webhook-signature is missing or empty, or the timestamp is not a
	// decimal Unix time of at most 18 digits.
	ErrWebhookHeaders = errors.New("client: webhook: missing or malformed webhook headers")
	// ErrWebhookTimestamp: the timestamp is further from now than the
	// tolerance (a replay, or a clock far off).
	ErrWebhookTimestamp = errors.New("client: webhook: timestamp outside the tolerance")
	// ErrWebhookSignature: no v1 signature of the header matches the
	// secret, id, timestamp and body (forged, tampered with, or signed
	// with another secret).
	ErrWebhookSignature = errors.New("client: webhook: no matching signature")
	// ErrWebhookSecret: the secret, less its optional "whsec_" prefix, is
	// empty or not standard, padded base64.
	ErrWebhookSecret = errors.New("client: webhook: the secret is not whsec_ and base64")
	// ErrWebhookPayload: the body is correctly signed but is not an event
	// (a JSON object with string type, timestamp and tenant and an object
	// data); a sender with the secret sent it, so tollgate is not it.
	ErrWebhookPayload = errors.New("client: webhook: the body is not an event")
)

// WebhookEvent is an event tollgate posted, as VerifyWebhook returns it
// once the signature and timestamp are good.
type WebhookEvent struct {
	// ID is the webhook-id header: the same for every delivery of one
	// event. Delivery is at least once, so deduplicate by it.
	ID string
	// Type is one of the Webhook constants, such as
	// WebhookLoginNewDevice, or a type this client does not know yet.
	Type string
	// Timestamp is when tollgate saw the event, in RFC 3339 as tollgate
	// wrote it (time.Parse(time.RFC3339, e.Timestamp)); the signed
	// webhook-timestamp header is the one the tolerance applies to.
	Timestamp string
	// Tenant is the tenant of the call that caused the event.
	Tenant string
	// Data is what the event is about.
	Data WebhookData
}

// WebhookData is the data of a WebhookEvent. Fields tollgate left out are
// empty.
type WebhookData struct {
	// Flow is the flow of the call, such as "login".
	Flow string
	// Rule is the policy rule that fired.
	Rule string
	// Reason is the verdict's reason.
	Reason string
	// Subject is the account or destination as the caller sent it in that
	// call. It identifies an end user: do not log it.
	Subject string
	// Ref is the caller's own opaque ref (a user id) given to check,
	// report or send, or "".
	Ref string
	// Details holds the event's other facts, as JSON decodes them into
	// any; never nil.
	Details map[string]any
}

// WebhookVerifier verifies webhooks under one secret with a tolerance
// other than the default. Its zero Tolerance is DefaultWebhookTolerance.
type WebhookVerifier struct {
	// Secret is the endpoint's secret as tollgate gave it: "whsec_" and
	// the base64 key, or the base64 key alone.
	Secret string
	// Tolerance is how far the timestamp may be from now, either way. The
	// default is DefaultWebhookTolerance (5 minutes).
	Tolerance time.Duration
}

// VerifyWebhook checks that body, with the webhook-id, webhook-timestamp
// and webhook-signature headers of h, was signed by tollgate under secret
// (Standard Webhooks: "v1," and the base64 HMAC-SHA256 of id.timestamp.body
// under the base64-decoded key after "whsec_") and sent within 5 minutes of
// now, and returns the event it holds.
//
// body must be the request's bytes exactly as they arrived: read them
// (through http.MaxBytesReader) before any JSON decoding, which would lose
// them. Any one of the space-separated signatures may match, so that a
// secret can be rotated; versions other than v1 are skipped. The
// comparison takes the same time wherever the signatures differ.
//
// The error matches (errors.Is) ErrWebhookSecret, ErrWebhookHeaders,
// ErrWebhookTimestamp, ErrWebhookSignature or ErrWebhookPayload, checked in
// that order; it never holds the body or a header's value.
func VerifyWebhook(secret string, h http.Header, body []byte, now time.Time) (WebhookEvent, error) {
	return WebhookVerifier{Secret: secret}.Verify(h, body, now)
}

// Verify is VerifyWebhook with v's secret and tolerance.
func (v WebhookVerifier) Verify(h http.Header, body []byte, now time.Time) (WebhookEvent, error) {
	key, err := webhookKey(v.Secret)
	if err != nil {
		return WebhookEvent{}, err
	}
	id, ts := headerFirst(h, "Webhook-Id"), headerFirst(h, "Webhook-Timestamp")
	sigs := strings.Join(headerValues(h, "Webhook-Signature"), " ")
	if id == "" || ts == "" || sigs == "" {
		return WebhookEvent{}, ErrWebhookHeaders
	}
	sec, ok := webhookTimestamp(ts)
	if !ok {
		return WebhookEvent{}, ErrWebhookHeaders
	}
	tol := v.Tolerance
	if tol <= 0 {
		tol = DefaultWebhookTolerance
	}
	if d := now.Unix() - sec; d > int64(tol/time.Second) || -d > int64(tol/time.Second) {
		return WebhookEvent{}, ErrWebhookTimestamp
	}
	if !webhookSigned(key, id, ts, body, sigs) {
		return WebhookEvent{}, ErrWebhookSignature
	}
	e, err := parseWebhookEvent(body)
	if err != nil {
		return WebhookEvent{}, err
	}
	e.ID = id
	return e, nil
}

// headerValues is h's values of name, whatever the case of h's keys (a
// header a server parsed has canonical keys; one built by hand may not).
func headerValues(h http.Header, name string) []string {
	if v := h.Values(name); v != nil {
		return v
	}
	var keys []string
	for k := range h {
		if strings.EqualFold(k, name) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys) // the same answer every time
	var vs []string
	for _, k := range keys {
		vs = append(vs, h[k]...)
	}
	return vs
}

// headerFirst is the first of headerValues, or "".
func headerFirst(h http.Header, name string) string {
	if v := headerValues(h, name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// webhookBase64 is standard, padded base64, as every client checks it
// (decoders differ on what else they let through).
var webhookBase64 = regexp.MustCompile(`^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`)

// webhookKey is the HMAC key of a secret.
func webhookKey(secret string) ([]byte, error) {
	s := strings.TrimPrefix(secret, "whsec_")
	if !webhookBase64.MatchString(s) {
		return nil, ErrWebhookSecret
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(key) == 0 {
		return nil, ErrWebhookSecret
	}
	return key, nil
}

// webhookTimestamp parses a webhook-timestamp: 1 to 18 ASCII digits, no
// sign, so that every client reads the same headers the same way.
func webhookTimestamp(ts string) (int64, bool) {
	if len(ts) > 18 {
		return 0, false
	}
	for i := range len(ts) {
		if ts[i] < '0' || ts[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	return n, err == nil
}

// webhookSigned reports whether one of the space-separated signatures of
// sigs is "v1," and the base64 of the HMAC of id.ts.body under key. The
// base64 text is compared as sent, in constant time, so that every client
// accepts exactly the same headers.
func webhookSigned(key []byte, id, ts string, body []byte, sigs string) bool {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	want := []byte(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	found := false
	for sig := range strings.SplitSeq(sigs, " ") {
		version, got, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		if subtle.ConstantTimeCompare([]byte(got), want) == 1 {
			found = true // no early return: look at every signature
		}
	}
	return found
}

// parseWebhookEvent decodes a signed body. Keys are matched exactly (not
// in any case, as encoding/json would), as the other clients match them.
func parseWebhookEvent(body []byte) (WebhookEvent, error) {
	var top map[string]json.RawMessage
	if !bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{")) || json.Unmarshal(body, &top) != nil {
		return WebhookEvent{}, ErrWebhookPayload
	}
	var e WebhookEvent
	var data map[string]json.RawMessage
	err := errors.Join(
		webhookField(top, "type", &e.Type),
		webhookField(top, "timestamp", &e.Timestamp),
		webhookField(top, "tenant", &e.Tenant),
		webhookObject(top, "data", &data),
		webhookField(data, "flow", &e.Data.Flow),
		webhookField(data, "rule", &e.Data.Rule),
		webhookField(data, "reason", &e.Data.Reason),
		webhookField(data, "subject", &e.Data.Subject),
		webhookField(data, "ref", &e.Data.Ref),
		webhookObject(data, "details", &e.Data.Details),
	)
	if err != nil {
		return WebhookEvent{}, fmt.Errorf("%w: %v", ErrWebhookPayload, err)
	}
	if e.Data.Details == nil {
		e.Data.Details = map[string]any{}
	}
	return e, nil
}

// webhookField decodes the string m[name] into dst; absent or null leaves
// it empty.
func webhookField(m map[string]json.RawMessage, name string, dst *string) error {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return nil
	}
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, dst) != nil {
		return fmt.Errorf("%s is not a string", name)
	}
	return nil
}

// webhookObject decodes the object m[name] into dst; absent or null
// leaves it nil.
func webhookObject[T any](m map[string]json.RawMessage, name string, dst *map[string]T) error {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return nil
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, dst) != nil {
		return fmt.Errorf("%s is not an object", name)
	}
	return nil
}
