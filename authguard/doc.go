// Package authguard is tollgate's engine: it decides whether a login or
// one-time-code attempt may go ahead now, and learns from how it ended.
//
// An auth system calls Check before it looks at a credential and Report after.
// Check answers a Verdict (Proceed, Delay, or Captcha) built from the
// signals of the attempt's flow: the account's progressive backoff, the IP
// prefix's request rate, the distinct accounts failing from the prefix and
// its wider IPv6 prefixes, its failures, and the accounts a password
// fingerprint failed on. A client with a valid device token trusted by the
// flow skips the IP rules and is counted on the device's own allowance and,
// beyond it, on the counter all devices of the account share. Check
// reserves: a Proceed already counts the attempt as a failure, atomically,
// and carries an attempt token; Report settles it, once (a failure confirms
// it, a success refunds that attempt only and returns a device token). Any
// other verdict leaves every counter as it was. Flow.MaxFailuresPerDay is
// the most failed checks one account can have in a flow in any 24 hours.
//
// Verdicts never depend on whether an account exists: identifiers are
// normalised (NormalizeAccount) and stored only as keyed hashes, every call
// does the same store work for any account, and every Verdict has the same
// JSON fields in the same order.
//
// State lives behind the Store contract: the engine turns a call into one
// batch of single-key operations (BackoffOp, LogOp, BucketOp) handed to
// Store.Do at once, so a networked store answers in one round trip and a
// Redis Cluster needs no multi-key atomicity. Apply is the reference
// semantics of every operation; internal/storetest holds each Store to it.
// When the store fails, a flow's fail mode decides: open answers from a local
// fallback store, closed answers Delay with reason "unavailable".
//
// The built-in policy is DefaultPolicyYAML; LoadPolicy lays a file over it.
package authguard
