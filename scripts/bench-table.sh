#!/usr/bin/env bash
# Issue 27's table in one command:
#   scripts/bench-table.sh [-rounds N] [-n CHECKS] [-c N] [-floor-n CALLS] [-ratelimit PATH] [-cluster=false]
# installs redis-server and redis-benchmark when missing (ensure-redis.sh),
# builds bin/tollgate and bin/tollgate-bench, then runs `tollgate-bench
# table`, which starts a redis-server, tollgate on it, a 3-master and a
# 6-master Redis Cluster and tollgate on each (-cluster=false leaves them
# out), tollgate on
# the memory store, the Go ceiling and envoy's ratelimit when `ratelimit` is
# on the PATH (go build -o ratelimit ./src/service_cmd in
# envoyproxy/ratelimit), all on free loopback ports; measures every row in
# interleaved rounds, and floor3, a fresh check's commands alone and its
# script (captured from the server) with redis-benchmark; prints the
# markdown table, the four ratios issue 27 targets and, for information,
# the script and its commands against floor3 and each other, the
# Cluster's total over one node's (fresh and refused) and the 6-master
# Cluster's Redis CPU over the 3-master one's, with each Cluster row's
# script calls per check; and stops every process it started, by PID, at
# the end, on failure or on Ctrl-C. tollgate-bench table -h lists the
# flags; the defaults (5 rounds of 20,000 checks per row) take a minute or
# two on the project's 2-core VM, and are bounded by -timeout (default 10m)
# always.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/ensure-redis.sh
command -v redis-benchmark >/dev/null || { echo "bench-table: redis-benchmark is missing (apt-get install redis-tools)" >&2; exit 1; }
go build -o bin/tollgate ./cmd/tollgate
go build -o bin/tollgate-bench ./cmd/tollgate-bench
exec bin/tollgate-bench table -tollgate bin/tollgate "$@"
