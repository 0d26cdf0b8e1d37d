// Package hibp is the k-anonymity half of a breached-password check that a
// caller runs on its own side: Hash splits the SHA-1 of a password into the
// 5-digit range prefix that is sent and the 35-digit suffix that is not, and
// Count finds the suffix in a range body in the format of Have I Been
// Pwned's Pwned Passwords range API (which tollgate's GET
// /v1/breached/{prefix} also answers in).
//
// It imports the standard library only, so that the Go client and the proxy
// can use it without pulling anything else into an auth system's binary.
//
// Only the prefix leaves the caller: it is shared by about a millionth of
// all SHA-1 values (16^5 = 1,048,576 ranges), and the full corpus puts
// several hundred breached hashes in every range, so the prefix alone does
// not say which password it is. The suffix, the hash and the password stay
// with the caller.
package hibp
