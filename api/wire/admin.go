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

// HeldSubject is one subject of a HeldList: an account or address held
// back in a flow now. Subject is the identifier, decrypted for this answer
// alone (the store keeps it sealed).
type HeldSubject struct {
	// Subject is the account (normalized) or the address.
	Subject string `json:"subject"`
	// Flow and Kind ("account" or "ip") say where and what it is.
	Flow string `json:"flow"`
	Kind string `json:"kind"`
	// Rule and Reason name the rule that holds it.
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	// WaitMS is how long its wait still runs, in milliseconds: 0 when it
	// ran out, or when a log over its limit holds it (Over).
	WaitMS int64 `json:"wait_ms"`
	Over   bool  `json:"over"`
	// Since is when it was last found held with a longer hold (RFC 3339).
	Since string `json:"since"`
	// ExpiresInMS is how long until the state that holds it is forgotten,
	// and the entry with it.
	ExpiresInMS int64 `json:"expires_in_ms"`
}

// HeldList is the answer to GET /v1/admin/held: a page of held subjects.
type HeldList struct {
	Subjects []HeldSubject `json:"subjects"`
	// Next is the cursor of the next page; empty on the last.
	Next string `json:"next,omitempty"`
	// Counts are the held subjects of the tenant by "flow:kind", every
	// page's.
	Counts map[string]int `json:"counts"`
}

// HeldResetRequest is the body of POST /v1/admin/reset-held: free held
// subjects of a flow in one call, those named in Subjects, or with none
// named every one the index lists (of Kind, when given).
type HeldResetRequest struct {
	// Flow names the flow. It is required.
	Flow string `json:"flow"`
	// Kind is "account" or "ip"; empty for both.
	Kind string `json:"kind,omitempty"`
	// Subjects are identifiers as the list gives them (at most 1000).
	Subjects []string `json:"subjects,omitempty"`
	// Reason says why, for the audit log: required, at most 200 bytes,
	// with no identifier.
	Reason string `json:"reason"`
	// DryRun counts what would be reset and changes nothing.
	DryRun bool `json:"dry_run,omitempty"`
}

// HeldReset is the answer to POST /v1/admin/reset-held.
type HeldReset struct {
	// Matched are the index's entries the request selected.
	Matched int `json:"matched"`
	// Reset are the subjects reset (0 on a dry run); Deleted the store
	// keys deleted.
	Reset   int  `json:"reset"`
	Deleted int  `json:"deleted"`
	DryRun  bool `json:"dry_run"`
}
