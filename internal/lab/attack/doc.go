// Package attack searches for the attack that beats one of tollgate's
// bounds: a seeded, bounded optimiser over the strategies the simulator's
// actors can express, each strategy scored by a deterministic run of
// internal/lab/simulate on the virtual clock.
//
// Objectives lists what is searched for a policy (failed checks on one
// account in 24 hours, accounts sprayed from one /48 or one IPv4 address
// before the first CAPTCHA, codes delivered to one phone or mailbox, the
// delay an attack causes the account's owner, device tokens a credential
// stuffer gets with leaked breached passwords and the step-ups he causes
// the owner at her known device) and the bound each must stay within; Search runs the optimiser for one of them and returns the best
// strategy found as a scenario file that reproduces its score through
// `tollgate-lab simulate`. Main is `tollgate-lab attack`. docs/design.md ("The
// attack search") justifies the method and lists the dimensions searched.
package attack
