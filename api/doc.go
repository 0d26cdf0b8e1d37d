// Package api is tollgate's HTTP layer: the chi router that serves POST
// /v1/check and POST /v1/report over an authguard.Engine (through the
// interfaces it declares for what it calls: Verdicts, Admin), strict JSON
// decoding, RFC 9457 problem+json errors, request ids, structured request
// logs and Prometheus metrics, as documented in openapi.yaml.
//
// Handlers are thin: decode (bounded by MaxBodyBytes) → validate → one engine
// call → write. Every error, whatever its cause, is written by one function
// as application/problem+json with a stable type URI; no error text from Go
// or a dependency ever reaches a client, and no input yields a 500.
//
// Request bodies are decoded strictly and deliberately:
//
//   - the content type must be application/json (a charset parameter, if
//     any, must be utf-8), else 415;
//   - the body must not be encoded: a Content-Encoding other than identity
//     is 415 (tollgate decodes none, and a plain body that claims one may
//     not be what the caller sent);
//   - the body must be at most MaxBodyBytes (8 KiB), else 413;
//   - it must be exactly one JSON object in UTF-8 (no string may escape a
//     lone surrogate either), with nothing but white space after it, else
//     400 malformed-json;
//   - keys are case-sensitive; a key the schema does not list is 400
//     unknown-field, naming it only when it is a field name of some
//     request (any other key may be an identifier), and a key given twice
//     is 400 duplicate-field (a parser that silently kept the last one
//     would let two parsers of one body disagree; a name given twice
//     inside a field's value is that field's invalid-field). The JSON
//     library, go-json-experiment, refuses all of these itself;
//   - null for an optional field means absent; null or absence for a
//     required field is 400 missing-field;
//   - a field of the wrong type or with an unusable value (an unknown flow,
//     an invalid IP, an empty account, ...) is 400 invalid-field naming it.
//
// A rejected request never reaches the engine, so it changes no state.
//
// Security: until caller authentication exists, anyone who can reach the
// listener can check, report and thereby slow down any account; the server
// (cmd/tollgate) therefore only binds loopback addresses.
package api
