package authguard

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/tollgate-auth/tollgate/backoff"
)

// Device tokens are HS256 JWTs (golang-jwt) signed with a key derived from
// the service's secret for them alone, so no other token can pass for one.
// They live in end users' cookies for months, so they use a standard format
// callers can inspect. Only HS256 is accepted when they are parsed: "none"
// and algorithm confusion are rejected by golang-jwt's WithValidMethods.
// Attempt tokens, which never leave the caller's back end, use a compact
// format of their own (attempt.go).
//
// Signing writes golang-jwt's bytes without golang-jwt: its SignedString
// marshals the header map and sets up an HMAC on every call, about half of
// a success report's signing cost. The header
// segment is a constant and the HMAC comes from a pool;
// TestSigner_SignsAsGolangJWT holds the bytes equal to SignedString's.

// hs256Header is the first segment of every token: golang-jwt's header for
// HS256, {"alg":"HS256","typ":"JWT"} (json.Marshal sorts a map's keys),
// base64url without padding.
const hs256Header = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"

// deviceClaims bind a device to one account of one tenant, for the flows
// of one trust group (Flow.DeviceTrust). Gen is the account's device
// generation when the token was issued (see deviceGenKey); a token issued
// at generation 0, and every token issued before generations existed,
// carries none and reads as 0.
type deviceClaims struct {
	Tenant  string `json:"t"`
	Trust   string `json:"g"`
	Account string `json:"a"`
	Device  string `json:"d"`
	Gen     int    `json:"gen,omitempty"`
	jwt.RegisteredClaims
}

type signer struct {
	key    []byte
	mac    *macPool // HMAC-SHA-256 under key
	parser *jwt.Parser
}

func newSigner(key []byte, now func() time.Time) *signer {
	return &signer{
		key: key,
		mac: newMacPool(key),
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithTimeFunc(now),
		),
	}
}

// sign returns claims as an HS256 JWT, byte for byte what golang-jwt's
// jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.key)
// returns: header "." claims "." signature, each base64url without padding,
// the claims as json.Marshal writes them, the signature HMAC-SHA-256 of the
// first two segments.
func (s *signer) sign(claims jwt.Claims) string {
	c, err := json.Marshal(claims)
	if err != nil {
		// The claims are strings and a date; a failure is a programming error.
		panic("authguard: signing token: " + err.Error())
	}
	enc := base64.RawURLEncoding
	b := make([]byte, 0, len(hs256Header)+1+enc.EncodedLen(len(c))+1+enc.EncodedLen(sha256.Size))
	b = append(b, hs256Header...)
	b = append(b, '.')
	b = enc.AppendEncode(b, c)
	sig := s.mac.sum(b)
	b = append(b, '.')
	b = enc.AppendEncode(b, sig[:])
	return string(b)
}

// parse verifies token into claims; false when it is malformed, forged or
// expired.
func (s *signer) parse(token string, claims jwt.Claims) bool {
	if token == "" || len(token) > MaxTokenBytes {
		return false
	}
	_, err := s.parser.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return s.key, nil })
	return err == nil
}

func expiry(now time.Time, ttl time.Duration) *jwt.NumericDate {
	return jwt.NewNumericDate(now.Add(ttl).Truncate(time.Second))
}

// The device generation of an account (Flow.RevokeDevicesOnPasswordChange)
// is a counter per account and trust group: a password_changed report
// counts one more, a device token carries the generation it was issued at,
// and a check that finds the account's generation above its token's treats
// the client as one without a token. The counter is a Backoff counter that
// never delays (deviceGenPolicy), so that every store keeps it with the
// operations it has, its key a keyed hash as every key is:
//
//   - a check reads it (a peek) in its own batch, every check of a flow
//     with the setting, token or not, account known or not: the same ops
//     for every client, so that the read tells nothing (generation);
//   - a password change counts one more (BackoffFail), which also moves
//     the counter's last change to now;
//   - a success that issues a token reads it and moves its last change to
//     now without changing it (a BackoffFail and a BackoffRefund in one
//     batch: genIssueOps).
//
// The counter forgets DeviceGenTTL after its last change, longer than any
// device token lives. So it is never forgotten while a token issued before
// a change it counted is still valid (a revoked token cannot come back
// when the key expires), nor while a token issued at its current
// generation is valid: a forgotten counter starts again at 0 only once
// every token of the account with a generation above 0 has expired, and a
// later change then revokes every token still valid. Were issuing not to
// touch it, a counter forgotten after a quiet year would count the next
// change as generation 1 while a token issued at 1 the year before could
// still be valid, and stay so.
//
// Its key is "g" and the account's hash, under the trust group: an
// administrator's reset of the account (a glob of keys starting with the
// account's hash) forgets its counters, not its revocations.
const deviceGenKey = "trust.gen"

// DeviceGenTTL is how long an account's device generation is kept after
// its last change: the longest device token lifetime and a day for the
// clocks of the instances and the store to differ.
const DeviceGenTTL = MaxDeviceTokenTTL + DeviceWindow

// deviceGenPolicy counts the device generation: Free is never reached, so
// the counter never waits; it forgets DeviceGenTTL after its last change.
var deviceGenPolicy = backoff.Policy{Free: math.MaxInt32, Base: time.Millisecond, Factor: 1, Max: time.Millisecond, ForgetAfter: DeviceGenTTL}

// deviceGenOp returns an op on the device generation of s's account in
// flow f's trust group.
func deviceGenOp(s *subjects, f *Flow, action BackoffAction) *BackoffOp {
	return &BackoffOp{Key: markedKey(s.keys, s.tenant, f.DeviceTrust, deviceGenKey, "g", s.account), Action: action, Policy: deviceGenPolicy}
}

// isDeviceGen reports whether op is on a device generation: its writes are
// never written back from the fallback (writeback.go), since a write-back
// bound that sheds one of an issue's two ops, or pads a counter with the
// fallback's count, would count a change nobody reported and revoke every
// token of the account.
func isDeviceGen(op *BackoffOp) bool { return strings.Contains(op.Key, ":"+deviceGenKey+":") }

// genIssueOps adds to p, a success report's plan that issues a device
// token for s's account, the read of the account's generation that the
// token carries: a failure counted and refunded in the same batch, which
// leaves the count as it was and moves its last change to now (see
// deviceGenKey). It returns the index of the op whose Count is the
// generation, or -1 when the flow revokes no tokens.
func genIssueOps(p *plan, s *subjects) int {
	f := s.flow
	if !f.RevokeDevicesOnPasswordChange || s.account == "" {
		return -1
	}
	p.addFacet(deviceGenOp(s, f, BackoffFail), f.device, roleCredit, FacetDeviceGeneration)
	p.addFacet(deviceGenOp(s, f, BackoffRefund), f.device, roleCredit, FacetDeviceGeneration)
	return len(p.ops) - 1
}

// issuedGen is the generation a token issued after batch b of plan p
// carries: the Count of op at, 0 when there is none or nothing answered
// (a token at 0 is revoked if the account has changed since: the safe
// side).
func issuedGen(p *plan, b *batch, at int) int {
	if at < 0 || at >= len(b.res) {
		return 0
	}
	return b.res[at].Count
}

// stepUpGen reads, for a token that a step-up issues for login flow f, the
// account's generation as a success report does (genIssueOps), in a call of
// its own: a step-up's pass has no other batch. It is 0 when the store
// does not answer.
func (e *Engine) stepUpGen(ctx context.Context, s *subjects, f *Flow) int {
	if !f.RevokeDevicesOnPasswordChange || s.account == "" {
		return 0
	}
	ls := *s
	ls.flow = f
	p := newPlan()
	at := genIssueOps(&p, &ls)
	b := e.do(ctx, f, p.ops, nil)
	return issuedGen(&p, &b, at)
}

// revoked reports whether the check of plan p, whose device token carries
// generation gen, found the account's generation above it (batch b): the
// owner changed the password since, and the token is no token.
func revoked(p *plan, b *batch, gen int) bool {
	at := p.generation()
	return at >= 0 && at < len(b.res) && b.res[at].Count > gen
}

// checkRevokeDevices checks that the flows that trust the same device
// tokens agree on RevokeDevicesOnPasswordChange: a change revokes a token
// for every flow that trusts it, or for none. It keeps the trust groups
// that revoke (Policy.revoking), whose send flows then revoke too.
//
// The flows that state the setting are those with a device rule: they
// issue the group's tokens and take its password_changed reports, and
// each must state it, so that no flow of the group is left out by a
// template or a copy. A send flow only trusts the group's tokens (the
// built-in otp_send trusts login's): it issues none and takes no
// password_changed report, so it has nothing of its own to state and may
// not (compileFlow). It follows its group instead, as it must for the
// setting to hold: a token revoked for the group's checks but not its
// sends would still take a thief past the sends' address rules. Asking
// the send flow to state it too would only add a way to get it wrong (the
// built-in otp_send left off while login turns it on), since the one
// right value is the group's.
func (p *Policy) checkRevokeDevices() error {
	seen := map[string]*Flow{}
	for _, name := range p.FlowNames() {
		f := p.flows[name]
		if f.device < 0 {
			continue
		}
		g := seen[f.DeviceTrust]
		if g == nil {
			seen[f.DeviceTrust] = f
			continue
		}
		if g.RevokeDevicesOnPasswordChange != f.RevokeDevicesOnPasswordChange {
			return &FieldError{Flow: f.Name, Field: "RevokeDevicesOnPasswordChange", Err: fmt.Errorf(
				"differs from flow %q's, which trusts the same device tokens (device_trust %q): a password change revokes them for every flow or for none", g.Name, f.DeviceTrust)}
		}
	}
	for trust, f := range seen {
		if f.RevokeDevicesOnPasswordChange {
			if p.revoking == nil {
				p.revoking = map[string]bool{}
			}
			p.revoking[trust] = true
		}
	}
	return nil
}

// revokes reports whether the checks or sends of flow f read the
// account's device generation (generation): a flow with
// RevokeDevicesOnPasswordChange, or a send flow whose trust group's flows
// have it (checkRevokeDevices).
func (p *Policy) revokes(f *Flow) bool {
	return f.RevokeDevicesOnPasswordChange || (f.Kind == Sends && p.revoking[f.DeviceTrust])
}

// DeviceRevocation says whether a password change revokes the device
// tokens flow f trusts in its checks or sends (On), and which flow states
// it (From). A flow with a device rule states its own. A send flow states
// none and follows its trust group (checkRevokeDevices), whose flows with
// a device rule all agree: From is the one named as the group (login, for
// the built-in otp_send) when it has a device rule, else the first of them
// by name. From is "" for a flow that trusts no device tokens: one without
// a device rule, or a send flow whose group has none.
func (p *Policy) DeviceRevocation(f *Flow) (on bool, from string) {
	if f.Kind != Sends {
		if f.device < 0 {
			return false, ""
		}
		return f.RevokeDevicesOnPasswordChange, f.Name
	}
	if g := p.flows[f.DeviceTrust]; g != nil && g.device >= 0 && g.DeviceTrust == f.DeviceTrust {
		return p.revokes(f), g.Name
	}
	for _, name := range p.FlowNames() {
		if g := p.flows[name]; g.device >= 0 && g.DeviceTrust == f.DeviceTrust {
			return p.revokes(f), g.Name
		}
	}
	return false, ""
}

// revokedCheck makes again, as a check without a device token, a check
// (or a send) whose token the owner revoked (revoked): what its batch
// reserved for the device is given back first (where it was reserved, and
// in what the fallback writes back to the store, which holds the
// reservations of a check the fallback let through), unless the store or
// reserve did already (a refused check's reservations are undone), and
// the check then meets the rules for unknown clients. What its batch took
// for a rule that counts checks, which keeps its units whatever the
// verdict, is given back too: the second batch takes a rule of all
// clients again (the same key), and one call counts once, or a thief with
// a revoked token would spend a victim's limit on such a rule at twice the
// rate of any other client; a rule of known clients only is not made
// again, and a revoked token is none, so it must not spend the owner's
// devices' limit there either. That second batch is paid only by a check
// with a revoked token, whose holder learns nothing from its time: he
// learns the token no longer counts from the verdict anyway. v is the
// first batch's verdict.
func (e *Engine) revokedCheck(ctx context.Context, s *subjects, p *plan, b batch, v Verdict, id string, solved bool) (plan, batch, Verdict) {
	if b.res != nil {
		reserved := !b.undone && v.Action == Proceed
		gates := p.gates(s.flow)
		for i, g := range gates {
			_, isRate := p.ops[i].(*RateOp)
			counted := isRate && !g.Undo // a rule that counts checks
			gates[i].Undo = g.Undo && reserved || counted
		}
		e.refund(ctx, p, gates, b)
		if reserved && b.src == SourceFallback && !errors.Is(b.err, ErrStoreFull) {
			e.writeBack.add(fallbackGiveBack(p, gates, b.res), nil)
		}
	}
	var none plan
	return e.reserve(ctx, s, "", id, solved, &none)
}

// fallbackGiveBack returns the give-back of what reserve queued for the
// store from a batch the fallback let through (writeback.go): the undos of
// the charged ops whose gates say Undo, but an owner allowance's, which
// reserve did not queue. Queued after those charges, it takes them out of
// the queue (a refund of the same attempt, a removal of the same member),
// so that the store, once back, does not keep what the fallback gave back:
// a revoked token's reservations for the device, which would otherwise
// stay failures of the owner's devices there.
func fallbackGiveBack(p *plan, gates []Gate, res []Result) []Op {
	var back []Op
	for i, op := range p.ops {
		ro := p.meta[i].role
		if !gates[i].Undo || !res[i].Charged || p.owned && (ro == roleVerified || ro == roleAllowance) {
			continue
		}
		if u := Undo(op); u != nil {
			back = append(back, u)
		}
	}
	return back
}
