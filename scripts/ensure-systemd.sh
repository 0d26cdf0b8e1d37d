#!/usr/bin/env bash
# Makes sure systemd-analyze is installed, from the system's packages (Debian's
# systemd package ships it), for the tests in deploy/ that verify
# deploy/systemd/tollgate.service and rate its sandbox (systemd-analyze verify,
# systemd-analyze security --offline=yes). Installing the package does not
# make systemd the init of a container; the tests need no running systemd.
set -euo pipefail
if command -v systemd-analyze >/dev/null; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "ensure-systemd: installing systemd (for systemd-analyze) from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq systemd >/dev/null
  command -v systemd-analyze >/dev/null && exit 0
  echo "ensure-systemd: the systemd package is installed but systemd-analyze is not on PATH." >&2
else
  echo "ensure-systemd: systemd-analyze is missing; install it (e.g. sudo apt-get install systemd)." >&2
fi
echo "ensure-systemd: without it the tests of deploy/systemd are skipped (and fail when CI=true)." >&2
[ "${CI:-}" = "true" ] && exit 1
exit 0
