#!/usr/bin/env bash
# Makes sure promtool is installed, from the system's packages (Debian's
# prometheus package ships it), for the tests in deploy/ that check the
# Prometheus alerting rules and run their unit tests. The package may start
# a system Prometheus on 9090; the tests do not use it.
set -euo pipefail
if command -v promtool >/dev/null; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "ensure-promtool: installing prometheus (for promtool) from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq prometheus >/dev/null
  command -v promtool >/dev/null && exit 0
  echo "ensure-promtool: the prometheus package is installed but promtool is not on PATH." >&2
else
  echo "ensure-promtool: promtool is missing; install it (e.g. sudo apt-get install prometheus," >&2
  echo "ensure-promtool: or promtool from a Prometheus release tarball on PATH)." >&2
fi
echo "ensure-promtool: without it the tests of deploy/prometheus are skipped (and fail when CI=true)." >&2
[ "${CI:-}" = "true" ] && exit 1
exit 0
