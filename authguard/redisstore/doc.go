// Package redisstore is the authguard.Store on Redis, Redis Sentinel or Redis
// Cluster, for when many tollgate instances must share one truth.
//
// Every operation is one embedded Lua script (backoff.lua, log.lua, rate.lua,
// and a one-line DEL) on one key, run with EVALSHA; the whole batch of a call goes out
// as one pipeline, so a call costs one network round trip. On a Cluster
// go-redis splits the pipeline per node and runs the parts in parallel; since
// no script touches two keys there is never a CROSSSLOT error. When Redis has
// lost its scripts (a restart, SCRIPT FLUSH, a failover) the answers that say
// NOSCRIPT are sent again with EVAL, which also loads the script, so no error
// reaches a caller.
//
// Time comes from Redis TIME inside each script, so instances with skewed
// clocks agree. Every key gets a PEXPIRE for exactly as long as its state can
// still change a verdict. Keys and values hold only hashes (see authguard).
//
// Each batch has a short deadline (50ms by default) and a circuit breaker
// stops calling a Redis that keeps failing, so callers get the flow's fail
// mode answer in bounded time while Redis is down. On a Cluster each master
// has a breaker of its own, and a dead or moved node's errors reload the
// slot map at once (failover.go), so a failover costs seconds and keys on
// healthy masters never fail with it.
package redisstore
