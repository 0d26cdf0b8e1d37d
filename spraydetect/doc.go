// Package spraydetect holds the pure pieces that catch password spraying:
// parsing and grouping client addresses into the prefixes that are counted,
// allow-listed ranges, and the sliding-window log of distinct members (accounts
// that failed from one prefix, accounts tried with one password fingerprint,
// failures from one prefix) with its limits.
//
// Nothing here reads a clock or does I/O: every function that depends on time
// takes it as an argument, in Unix milliseconds where state is kept, so that the
// Redis store's Lua scripts can reproduce the log exactly.
package spraydetect
