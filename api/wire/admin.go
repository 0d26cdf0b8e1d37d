package wire

// ExplainRequest is the body of POST /v1/admin/explain: why was this subject
// delayed? Give any of Account, IP and Destination (with Channel); rules on
// a part left out are not shown. Optional fields are omitted when empty.
type ExplainRequest struct {
	// Flow names the flow to explain. It is required.
	Flow string `json:"flow"`
	// Account is the account identifier, as for a check.
	Account string `json:"account,omitempty"`
	// IP is the end user's address, as for a check.
	IP string `json:"ip,omitempty"`
	// Destination is a one-time code's destination; with Channel.
	Destination string `json:"destination,omitempty"`
	// Channel is the destination's channel; with Destination.
	Channel string `json:"channel,omitempty"`
}

// Explanation is the answer to POST /v1/admin/explain: every rule of the
// flow that counts the subject, with its state, and the verdict a check (or
// send) would get now without a CAPTCHA. It holds no identifier.
type Explanation struct {
	// Flow is the explained flow.
	Flow string `json:"flow"`
	// Verdict is what a check would answer now; it carries no tokens.
	Verdict Verdict `json:"verdict"`
	// Rules are the states of the flow's rules that count the subject, in
	// the flow's order.
	Rules []RuleState `json:"rules"`
	// Entries are the administrators' entries that decide for the subject
	// in this flow.
	Entries []Entry `json:"entries"`
}

// RuleState is one rule of an Explanation.
type RuleState struct {
	// Rule is the rule's name in the policy.
	Rule string `json:"rule"`
	// Reason is the reason code the rule answers with.
	Reason string `json:"reason"`
	// Subject is what the rule counts, such as "account" or "ip/56".
	Subject string `json:"subject"`
	// Algorithm is the rule's algorithm, such as "backoff".
	Algorithm string `json:"algorithm"`
	// Facet is "" for the rule's own state; else the part the row shows,
	// kept in a sliding log: "known_network", "network_allowance" or
	// "network_slot" (rows of the device rule, for a client without a
	// device token), or, on a send flow, "verified_destination",
	// "verified_network", "owner_codes" or "owner_resend" (the owner's
	// allowance, which no rule names: Rule and Reason are then empty).
	Facet string `json:"facet"`
	// Count is a backoff's failures, or a log's members in its longest
	// window.
	Count int `json:"count"`
	// Remaining is a rate rule's units left.
	Remaining int `json:"remaining"`
	// WaitMS is how long the next call would wait, in milliseconds.
	WaitMS int64 `json:"wait_ms"`
	// Over says whether the next call would be past the rule's limit.
	Over bool `json:"over"`
	// ResetMS is a rate rule's time until its state is forgotten, in
	// milliseconds.
	ResetMS int64 `json:"reset_ms"`
}

// ResetRequest is the body of POST /v1/admin/reset: clear one subject's
// state in a flow. Give exactly one of Account, IP or Destination (with
// Channel). Optional fields are omitted when empty.
type ResetRequest struct {
	// Flow names the flow. It is required.
	Flow string `json:"flow"`
	// Account clears the account's counters in the flow, its devices'
	// included.
	Account string `json:"account,omitempty"`
	// IP clears the address's own logs and buckets (not the wider IPv6
	// prefixes, which others share).
	IP string `json:"ip,omitempty"`
	// Destination clears a destination's quotas; with Channel.
	Destination string `json:"destination,omitempty"`
	// Channel is the destination's channel; with Destination.
	Channel string `json:"channel,omitempty"`
	// Reason goes to the audit log line. It is required, 1 to 200 bytes;
	// write no identifier in it.
	Reason string `json:"reason"`
	// Ref is, with Account, the caller's own opaque reference for the
	// account's owner, as in CheckRequest: passed only to the
	// account.reset notice, so that its receiver knows whom it concerns;
	// never stored or logged.
	Ref string `json:"ref,omitempty"`
}

// ResetResult is the answer to POST /v1/admin/reset.
type ResetResult struct {
	// Deleted is how many store keys the reset deleted.
	Deleted int `json:"deleted"`
}

// ReloadResult is the answer to POST /v1/admin/reload: the policy now in
// force.
type ReloadResult struct {
	// Flows are the default tenant's flows after the reload, sorted.
	Flows []string `json:"flows"`
	// RestartNeeded names the settings the file changes that only a
	// restart applies (listen, redis, secret, auth, tls, ...), sorted;
	// empty when none. The running process keeps their old values.
	RestartNeeded []string `json:"restart_needed"`
}
