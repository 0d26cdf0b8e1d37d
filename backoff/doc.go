// Package backoff is the progressive-delay policy that replaces hard account
// lockout: the first failures are free, then every further failure doubles (or
// multiplies by Factor) the time before the next attempt may go ahead, up to a
// maximum, and a quiet period forgets everything.
//
// The package is pure. Every transition takes the current time as an argument
// and works in whole milliseconds, so that the Redis store's Lua scripts can
// reproduce it bit for bit (see authguard/redisstore).
package backoff
