#!/usr/bin/env bash
# Makes sure Debian's python3 (>= 3.9) and its mypy are installed, for the
# Python client's tests (which run mypy --strict over the package); the
# client itself uses the standard library only. Prints the interpreter the
# tests run with: /usr/bin/python3 when the system has it, else python3.
set -euo pipefail
python() { if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else command -v python3; fi; }
have() {
  py=$(python) && [ -n "$py" ] &&
    "$py" -c 'import sys, importlib.util; sys.exit(0 if sys.version_info >= (3, 9) and importlib.util.find_spec("mypy") else 1)'
}
if have; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "ensure-python: installing python3 and python3-mypy from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq python3 python3-mypy >/dev/null
  have && exit 0
fi
echo "ensure-python: python3 >= 3.9 with mypy is needed (e.g. sudo apt-get install python3 python3-mypy)." >&2
exit 1
