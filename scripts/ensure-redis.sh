#!/usr/bin/env bash
# Makes sure redis-server and redis-cli are installed, from the system's
# packages, for the tests that run against a real Redis and Redis Cluster.
# The tests start and stop their own servers on free loopback ports.
set -euo pipefail
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "ensure-redis: installing redis-server and redis-tools from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq redis-server redis-tools >/dev/null
  # The package may start a system instance on 6379; the tests do not use it.
  exit 0
fi
echo "ensure-redis: redis-server is missing; install it (e.g. sudo apt-get install redis-server)." >&2
echo "ensure-redis: without it the Redis tests are skipped (and fail when CI=true)." >&2
[ "${CI:-}" = "true" ] && exit 1
exit 0
