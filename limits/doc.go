// Package limits holds the request-rate algorithms tollgate offers, each one
// pure function of (state, now, parameters) → (state, decision). Times in state
// are Unix milliseconds so that the Redis store's Lua scripts can reproduce
// them exactly.
package limits
