// Package spraydetect holds the pure pieces that catch password spraying:
// parsing and grouping client addresses into the prefixes that are counted,
// allow-listed ranges, and the sliding-window log of distinct members (accounts
// that failed from one prefix, accounts tried with one password fingerprint,
// failures from one prefix) with its limits.
//
// Grouping counts an IPv4 address as a /32 and native IPv6 as a /64 (or the
// configured IPv6Bits), so that rotating through one customer's /64 buys
// nothing. Every IPv6 form of one IPv4 address counts as that address:
// IPv4-mapped, 6to4 (2002::/16) and Teredo (2001::/32) — see EmbeddedIPv4.
// WidePrefix gives the wider native IPv6 prefixes (/56, /48) that aggregate
// limits count, so that one customer's many /64s share a budget too.
//
// Looking through an address to its IPv4 address is for counting only: it puts
// every address routed back to one IPv4 address into that address's budget.
// Trust is never inherited that way:
// AllowList.Contains matches an address as itself, so an allow-listed IPv4
// office does not cover its 6to4 or Teredo forms, which anyone able to send
// from those ranges can forge.
//
// Nothing here reads a clock or does I/O: every function that depends on time
// takes it as an argument, in Unix milliseconds where state is kept, so that the
// Redis store's Lua scripts can reproduce the log exactly.
package spraydetect
