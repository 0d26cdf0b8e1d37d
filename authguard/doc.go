// Package authguard is tollgate's engine: it decides whether a login or
// one-time-code attempt may go ahead now, and learns from how it ended.
//
// An auth system calls Check before it looks at a credential and Report after.
// Check answers a Verdict (Proceed, Delay, or Captcha) built from the rules of
// the attempt's flow (Flow, Rule): each rule counts one subject (the account,
// a known device, the IP prefix or a wider IPv6 prefix, the password
// fingerprint, the tenant, or a compound) with one algorithm (progressive
// backoff, a log of distinct members, or one of the five rate algorithms of
// package limits), at a moment (a failure, a check, a proceed), and asks for a
// delay or a CAPTCHA past its limit under its own reason code. A client with a
// valid device token trusted by the flow is counted by the flow's device rule
// (the device's own allowance and, beyond it, the counter all devices of the
// account share) and skips the rules for unknown clients. Check reserves: a
// Proceed already counts the attempt as a failure, atomically, and carries an
// attempt token; Report settles it, once (a failure confirms it, a success
// refunds that attempt only and returns a device token). Any other verdict
// gives back what the check reserved. Flow.MaxFailuresPerDay is the most
// failed checks one account can have in a flow in any 24 hours.
//
// Verdicts never depend on whether an account exists: identifiers are
// normalised (NormalizeAccount) and stored only as keyed hashes, every call
// does the same store work for any account, and every Verdict has the same
// JSON fields in the same order.
//
// State lives behind the Store contract: the engine turns a call into one
// batch of single-key operations (BackoffOp, LogOp, RateOp, DeleteOp) handed
// to Store.Do at once, so a networked store answers in one round trip and a
// Redis Cluster needs no multi-key atomicity. Apply is the reference
// semantics of every operation; internal/testkit/storetest holds each Store to it.
// A check goes through Reserve, which also undoes the check's reservations
// when it does not proceed; a Store that is a Reserver (Redis on one node)
// does both in one step.
// When the store fails, a flow's fail mode decides: open answers from a local
// fallback store, closed answers Delay with reason "unavailable".
//
// The engine takes its policy as Go values (NewPolicy); tollgate's YAML
// format and built-in policy live in internal/config.
//
// # Files
//
// The engine is split by concern: engine.go (Config, Engine, New, the
// per-tenant policy and hasher); admission.go (call slots and the kept
// priority slots); check.go, send.go and report.go (the three calls);
// subjects.go and keys.go (a request's validated, hashed parts and the
// store keys made of them); plan.go (a call's batch of ops, their roles and
// gates); batch.go (running a plan on the store or the fallback, the held
// state of a full or absent store); combine.go (results into a verdict);
// reserve.go (Reserve and Finish); bound.go (a flow's bound on failed
// checks per account, as validate-config prints it); recall.go, records.go
// and writeback.go (what the engine remembers of the store, and what it
// writes back after a fault); algorithms.go and rate.go (the algorithm table and the rate ops);
// entries.go (administrators' allow and deny entries); notice.go and
// notify.go (what the engine tells); reload.go (the policy swapped whole);
// trace.go (the tracer's hooks); destination.go, mailbox.go and
// normalize.go (identifiers and destinations).
package authguard
