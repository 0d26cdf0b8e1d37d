package wire

// EntryRequest is the body of POST /v1/admin/allow and /v1/admin/deny: a
// temporary entry on exactly one of an IP range, a destination prefix and
// a country.
type EntryRequest struct {
	// Flow is the flow the entry applies to; empty for every flow of the
	// tenant (every send flow, for destination prefixes and countries).
	Flow string `json:"flow,omitempty"`
	// IPRange is a CIDR range (IPv4 /8 to /32, IPv6 /16 to /128, host bits
	// zero) or one address.
	IPRange string `json:"ip_range,omitempty"`
	// DestinationPrefix is an E.164 prefix: "+" and 1 to 15 digits.
	DestinationPrefix string `json:"destination_prefix,omitempty"`
	// Country is a region, such as "FR".
	Country string `json:"country,omitempty"`
	// Action is, for /deny only, "block" (the default) or "captcha".
	Action string `json:"action,omitempty"`
	// ExpiresIn is how long the entry lasts, 1m to 30d: "90m", "12h", "7d".
	ExpiresIn string `json:"expires_in"`
	// Reason says why, for the audit log; no identifier.
	Reason string `json:"reason"`
}

// Entry is an entry as tollgate keeps it: never the range or the prefix,
// only its length.
type Entry struct {
	// ID names the entry, for POST /v1/admin/remove.
	ID string `json:"id"`
	// Kind is "allow", "block" or "captcha".
	Kind string `json:"kind"`
	// Flow is the flow it applies to; empty for every flow.
	Flow string `json:"flow"`
	// Subject is "ip_range", "destination_prefix" or "country".
	Subject string `json:"subject"`
	// Family is an IP range's, "ipv4" or "ipv6"; empty otherwise.
	Family string `json:"family"`
	// Length is an IP range's prefix length or a destination prefix's
	// number of digits; zero for a country.
	Length int `json:"length"`
	// Country is a country entry's region; empty otherwise.
	Country string `json:"country"`
	// Reason and By say why and who (the token's subject).
	Reason string `json:"reason"`
	By     string `json:"by"`
	// CreatedAt and ExpiresAt are RFC 3339 times in UTC.
	CreatedAt string `json:"created_at"`
	ExpiresAt string `json:"expires_at"`
}

// Entries is the answer of GET /v1/admin/entries.
type Entries struct {
	Entries []Entry `json:"entries"`
}

// RemoveRequest is the body of POST /v1/admin/remove.
type RemoveRequest struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Removed is the answer of POST /v1/admin/remove.
type Removed struct {
	// Removed is false when no such entry was there (removed or expired).
	Removed bool `json:"removed"`
}
