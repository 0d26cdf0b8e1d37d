#!/usr/bin/env bash
# Makes sure Debian's python3 (>= 3.9) and its mypy are installed, for the
# Python client's tests (which run mypy --strict over the package), with
# what building and installing it offline takes (python3-build,
# python3-venv: scripts/build-python.sh, make release) and the Django that
# tollgate.django's tests run on (python3-django); the client itself uses
# the standard library only. Prints the interpreter the tests run with:
# /usr/bin/python3 when the system has it, else python3.
set -euo pipefail
python() { if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else command -v python3; fi; }
have() {
  py=$(python) && [ -n "$py" ] &&
    "$py" -c 'import sys, importlib.util as u; sys.exit(0 if sys.version_info >= (3, 9) and all(u.find_spec(m) for m in ("mypy", "build", "setuptools", "wheel", "ensurepip", "django")) else 1)'
}
if have; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "ensure-python: installing python3, python3-mypy, python3-build, python3-venv and python3-django from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends python3 python3-mypy python3-build python3-setuptools python3-wheel \
    python3-venv python3-django >/dev/null
  have && exit 0
fi
echo "ensure-python: python3 >= 3.9 with mypy, build, venv and Django is needed (e.g. sudo apt-get install python3 python3-mypy python3-build python3-venv python3-django)." >&2
exit 1
