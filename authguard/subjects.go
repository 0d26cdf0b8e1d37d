package authguard

import (
	"net/netip"
	"unicode/utf8"

	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// subjects is a validated request: its flow and the hashes of the parts its
// rules count.
type subjects struct {
	keys    keyspace
	tenant  string
	policy  *Policy // the tenant's, as the call found it: one policy a call
	flow    *Flow
	account string     // hash, or empty when the flow counts no account and none was sent
	ip      string     // hash of the IP prefix; empty when allow-listed or not sent
	addr    netip.Addr // the address, when ip is set
	fp      string     // hash of the password fingerprint, or empty
	// A send's destination, its prefix and its country (empty for e-mail),
	// hashed; empty for a check or report.
	dest, destPrefix, country string
	// price is what the send costs (SendPolicy.Prices).
	price int
	// entries are the tenant's entries, nil when it has none; match is what
	// they say of this call.
	entries *entrySet
	match   entryMatch
}

// sentParts are the parts of a request that every call has, as the client
// sent them, for subjectsOf.
type sentParts struct {
	// kind is the kind of flow the call is for: a check or report names a
	// flow of Attempts, a send one of Sends.
	kind Kind
	// tenant, flow, account, ip and fingerprint are the request's fields,
	// "" when not sent.
	tenant, flow, account, ip, fingerprint string
	// optional lets the parts the flow's rules count be missing (an
	// explanation of one IP, or one account).
	optional bool
}

// subjectsOf validates and hashes the parts every call has. Account and IP
// are required when the flow's rules count them (unless optional), and
// validated whenever they are sent. It changes no state.
func (e *Engine) subjectsOf(in sentParts) (subjects, error) {
	var s subjects
	tenant := in.tenant
	if tenant == "" {
		tenant = DefaultTenant
	}
	if !wire.ValidTenant(tenant) {
		return s, &InputError{Field: "tenant", Detail: "must be 1 to 64 lower-case letters, digits, '-' and '_'"}
	}
	s.keys, s.tenant = e.keys, tenant
	s.policy = e.policyFor(tenant)
	if s.flow = s.policy.Flow(in.flow); s.flow == nil {
		return s, &InputError{Field: "flow", Detail: "is not a configured flow"}
	}
	if s.flow.Kind != in.kind {
		if in.kind == Sends {
			return s, &InputError{Field: "flow", Detail: "is not a send flow (kind: send): it answers /v1/check and /v1/report"}
		}
		return s, &InputError{Field: "flow", Detail: "is a send flow (kind: send): it answers /v1/otp/send only"}
	}
	needs := s.flow.needs
	if in.optional {
		needs = 0
	}
	if in.account == "" && needs&(PartAccount|PartDevice) != 0 && s.flow.Kind != Sends { // a send's account is optional
		return s, &InputError{Field: "account", Detail: "is required by this flow's rules", Missing: true}
	}
	if in.ip == "" && needs&PartIP != 0 {
		return s, &InputError{Field: "ip", Detail: "is required by this flow's rules", Missing: true}
	}
	if in.account != "" {
		acct, err := NormalizeAccount(in.account)
		if err != nil {
			return s, err
		}
		s.account = e.hasher(tenant).subject(tenant, "account", acct)
	}
	if set := e.entrySet(tenant); set != nil && len(set.all) > 0 {
		s.entries = set
	}
	if in.ip != "" {
		addr, err := spraydetect.ParseIP(in.ip)
		if err != nil {
			return s, &InputError{Field: "ip", Detail: "must be an IPv4 or IPv6 address, without zone, port or prefix length"}
		}
		if s.entries != nil {
			e.matchIP(&s.match, s.entries, tenant, s.flow.Name, addr, e.now())
		}
		s.addr = addr
		if !s.flow.AllowList.Contains(addr) && !s.match.allowed[ScopeIPRange] {
			s.ip = e.hasher(tenant).prefix(tenant, s.flow.Grouping.Prefix(addr))
		}
	}
	if len(in.fingerprint) > MaxFingerprintBytes || !utf8.ValidString(in.fingerprint) {
		return s, &InputError{Field: "password_fingerprint", Detail: "must be valid UTF-8 of at most 256 bytes"}
	}
	if in.fingerprint != "" {
		s.fp = e.hasher(tenant).subject(tenant, "fp", in.fingerprint)
	}
	return s, nil
}

// sendSubjects parses a send's channel and destination and sets their
// hashes and price in s.
func (e *Engine) sendSubjects(s *subjects, channel, destination string) (Destination, error) {
	d, err := e.destinationOf(s, s.flow, channel, destination)
	if err != nil {
		return Destination{}, err
	}
	s.price = s.flow.Send.price(&d)
	if s.entries != nil && d.Channel.Phone() {
		e.matchDestination(&s.match, s.entries, s.tenant, s.flow.Name, d.Normalized, d.Region, e.now())
		if s.match.allowed[ScopeDestinationPrefix] {
			s.destPrefix = ""
		}
		if s.match.allowed[ScopeCountry] {
			s.country = ""
		}
	}
	return d, nil
}

// destinationOf parses a channel and destination as send flow sf does and
// sets the hashes of the destination's parts in s. A phone number has a
// destination_prefix (its block) and a country; an e-mail address has
// neither: a domain such as gmail.com is everybody's, not a block, so the
// rules on them skip e-mail.
func (e *Engine) destinationOf(s *subjects, sf *Flow, channel, destination string) (Destination, error) {
	if channel == "" {
		return Destination{}, &InputError{Field: "channel", Detail: "is required", Missing: true}
	}
	ch, err := ParseChannel(channel)
	if err != nil {
		return Destination{}, err
	}
	if destination == "" {
		return Destination{}, &InputError{Field: "destination", Detail: "is required", Missing: true}
	}
	d, err := ParseDestination(ch, destination, sf.Send.PrefixDigits)
	if err != nil {
		return Destination{}, err
	}
	h := e.hasher(s.tenant)
	s.dest = h.subject(s.tenant, "destination", d.Mailbox) // one inbox, one destination, whatever its spelling
	s.destPrefix, s.country = "", ""
	if ch.Phone() {
		s.destPrefix = h.subject(s.tenant, "destination_prefix", d.Prefix)
	}
	if d.Region != "" {
		s.country = h.subject(s.tenant, "country", d.Region)
	}
	return d, nil
}

// verifiedSubjects parses the destination a check or report on a flow that
// verifies a send flow's codes names, sets its hashes in s (for the flow's
// own rules on the destination), and returns the send flow's subjects for
// it (whose keys are the send flow's, for conversion credits). The
// destination is checked as a send checks it; a flow that verifies none
// takes no destination.
func (e *Engine) verifiedSubjects(s *subjects, channel, destination string) (*subjects, error) {
	sf := s.policy.Flow(s.flow.Verifies)
	if sf == nil {
		return nil, &InputError{Field: "destination", Detail: "is taken only by flows that verify a send flow's codes (verifies: otp_send)"}
	}
	if _, err := e.destinationOf(s, sf, channel, destination); err != nil {
		return nil, err
	}
	v := *s
	v.flow = sf
	return &v, nil
}

// deviceID returns the device id of a valid device token issued for this
// account of this tenant by a flow of this flow's trust group, or "" for
// anything else: a token for another account or trust group, a forged or
// expired one is simply untrusted, not an error. A flow of checks without
// a device rule trusts no token; a send flow trusts its group's tokens, so
// that a known device skips the rules for unknown clients (the IP rules).
func (e *Engine) deviceID(s *subjects, token string) string {
	d, _ := e.deviceOf(s, token)
	return d
}

// deviceOf is deviceID with the device generation the token was issued at
// (deviceClaims.Gen).
func (e *Engine) deviceOf(s *subjects, token string) (string, int) {
	if token == "" || (s.flow.device < 0 && s.flow.Kind != Sends) || s.account == "" {
		return "", 0
	}
	var c deviceClaims
	if !e.tokens.parse(token, &c) || c.Tenant != s.tenant || c.Trust != s.flow.DeviceTrust ||
		c.Account != s.account || len(c.Device) != hashLen || c.Gen < 0 {
		return "", 0
	}
	return c.Device, c.Gen
}
