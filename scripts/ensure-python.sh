#!/usr/bin/env bash
# Makes sure a python3 (>= 3.9) is installed, from the system's packages
# (Debian's python3), for the Python client's tests; the client uses the
# standard library only, so nothing else is installed.
set -euo pipefail
have() {
  command -v python3 >/dev/null &&
    python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)'
}
if have; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "ensure-python: installing python3 from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq python3 >/dev/null
  have && exit 0
fi
echo "ensure-python: python3 >= 3.9 is needed (e.g. sudo apt-get install python3)." >&2
exit 1
