package wire

// ProblemBase prefixes every problem type URI tollgate answers with.
const ProblemBase = "https://tollgate.dev/problems/"

// The problem types, as listed in openapi.yaml. They are stable: new ones
// may be added, none is ever changed.
const (
	// ProblemMalformedJSON (400): the body is not one JSON object in UTF-8.
	ProblemMalformedJSON = ProblemBase + "malformed-json"
	// ProblemMissingField (400): a required field is absent or null; Field
	// names it.
	ProblemMissingField = ProblemBase + "missing-field"
	// ProblemInvalidField (400): a field has the wrong type or an unusable
	// value; Field names it.
	ProblemInvalidField = ProblemBase + "invalid-field"
	// ProblemUnknownField (400): the body has a key the schema does not list.
	ProblemUnknownField = ProblemBase + "unknown-field"
	// ProblemDuplicateField (400): the body has the same key twice.
	ProblemDuplicateField = ProblemBase + "duplicate-field"
	// ProblemNotFound (404): no such route.
	ProblemNotFound = ProblemBase + "not-found"
	// ProblemMethodNotAllowed (405): the route exists for other methods.
	ProblemMethodNotAllowed = ProblemBase + "method-not-allowed"
	// ProblemBodyTooLarge (413): the body is over 8 KiB.
	ProblemBodyTooLarge = ProblemBase + "body-too-large"
	// ProblemUnsupportedMediaType (415): the content type is not
	// application/json.
	ProblemUnsupportedMediaType = ProblemBase + "unsupported-media-type"
	// ProblemInternal (500): a bug in tollgate, never caused by input.
	ProblemInternal = ProblemBase + "internal"
	// ProblemStoreUnavailable (503, /readyz only): the store does not answer.
	ProblemStoreUnavailable = ProblemBase + "store-unavailable"
	// ProblemStoreFull (503, /readyz only): the store refuses writes.
	ProblemStoreFull = ProblemBase + "store-full"
	// ProblemOverloaded (503): the call was shed and nothing was counted;
	// retry after Retry-After.
	ProblemOverloaded = ProblemBase + "overloaded"
	// ProblemUnauthenticated (401): no valid bearer token.
	ProblemUnauthenticated = ProblemBase + "unauthenticated"
	// ProblemForbidden (403): the token's scopes do not allow the call.
	ProblemForbidden = ProblemBase + "forbidden"
	// ProblemTooManyEntries (409, admin allow and deny): the tenant already
	// holds as many unexpired entries as it may.
	ProblemTooManyEntries = ProblemBase + "too-many-entries"
	// ProblemConfigInvalid (409, admin reload): the configuration file does
	// not load or validate, or its policy cannot replace the running one;
	// the running policy stays.
	ProblemConfigInvalid = ProblemBase + "config-invalid"
	// ProblemSecretMismatch (503, /readyz only): an instance keyed by
	// another secret shares the store and counts apart from this one.
	ProblemSecretMismatch = ProblemBase + "secret-mismatch"
	// ProblemStoreEvicts (503, /readyz only, with -strict-store): the store
	// may evict tollgate's keys (a Redis maxmemory-policy other than
	// noeviction).
	ProblemStoreEvicts = ProblemBase + "store-evicts"
	// ProblemStoreUnpersisted (503, /readyz only, with -strict-store): a
	// Redis master keeps neither an append-only file nor RDB snapshots, so
	// a restart resets every counter.
	ProblemStoreUnpersisted = ProblemBase + "store-unpersisted"
	// ProblemStoreUnauthenticated (503, /readyz only, with -strict-store):
	// a Redis master answers without a password on an address that is not
	// loopback.
	ProblemStoreUnauthenticated = ProblemBase + "store-unauthenticated"
	// ProblemBreachedOff (404, GET /v1/breached/{prefix}): the server has no
	// breached-password corpus and no upstream range API.
	ProblemBreachedOff = ProblemBase + "breached-off"
	// ProblemBreachedUnavailable (503, GET /v1/breached/{prefix}): the
	// upstream range API did not answer a usable range in time. A caller
	// treats it, as any error, as "not known to be breached".
	ProblemBreachedUnavailable = ProblemBase + "breached-unavailable"
)

// Problem is an RFC 9457 problem document (application/problem+json), the
// body of every error tollgate answers.
type Problem struct {
	// Type is one of the Problem type URIs.
	Type string `json:"type"`
	// Title is a short summary of the type, the same for every problem of
	// that type.
	Title string `json:"title"`
	// Status is the HTTP status code.
	Status int `json:"status"`
	// Detail says what is wrong, for the caller's developer. tollgate never
	// repeats a submitted value in it.
	Detail string `json:"detail"`
	// Field is, on a 400, the request field at fault.
	Field string `json:"field,omitempty"`
	// RequestID is the request's id, as in the X-Request-Id header.
	RequestID string `json:"request_id,omitempty"`
}
