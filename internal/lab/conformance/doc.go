// Package conformance is tollgate's conformance report: for a profile (NIST
// SP 800-63B-4, OWASP ASVS 5.0 Level 2) it maps each requirement tollgate
// addresses to what a policy does about it, computed from the policy's own
// rules and numbers, to the evidence that shows it holds (a worst case an
// adversarial search found, scenarios run on the policy, and the tests
// named in docs/design.md §10), and to pass or fail.
//
// The mapping is tollgate's reading of each requirement, written in its own
// words, not the standard's text. The package also holds the caps the
// report computes from a flow (DestinationCodes, DestinationGuesses; the
// bound on failed checks per account is the engine's own,
// authguard.Flow.FailureBound, which `tollgate validate-config` prints
// too), and, per profile, a preset: a config that meets it with the least
// friction for real users.
package conformance
