#!/usr/bin/env bash
# Builds the Python client's source distribution and wheel (clients/python:
# the package tollgate, with tollgate.django) offline, reproducibly: no
# index, no build isolation, only Debian's python3-build, python3-setuptools
# and python3-wheel (scripts/ensure-python.sh installs them).
#
#   scripts/build-python.sh [OUT]      (default dist/; make release calls it)
#
# It writes OUT/tollgate-<version>.tar.gz and OUT/tollgate-<version>-py3-none-any.whl,
# each with LICENSE, and prints their paths. The wheel is built from the
# sdist (python -m build's way), so a file the sdist lacks fails the build.
# Every time in them is SOURCE_DATE_EPOCH (the commit's, when unset), every
# owner 0 and every mode this umask's, so one commit gives the same bytes on
# any machine with the same Debian packages.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-dist}
if [ -n "${PYTHON:-}" ]; then
  py=$PYTHON
elif [ -x /usr/bin/python3 ]; then
  py=/usr/bin/python3
else
  py=$(command -v python3)
fi
if ! "$py" -c 'import build, setuptools, wheel' 2>/dev/null; then
  echo "build-python: $py lacks build, setuptools or wheel (scripts/ensure-python.sh installs python3-build)" >&2
  exit 1
fi

umask 022
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || echo 315532800)
fi
export SOURCE_DATE_EPOCH
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A copy of the package's directory, without what a build or a test run
# leaves in it, so that the tree stays clean and nothing stale is packed.
mkdir -p "$work/src"
tar -C clients/python --exclude=__pycache__ --exclude='*.egg-info' --exclude=./build --exclude=./dist \
  -cf - . | tar -C "$work/src" -xf -
"$py" -m build --no-isolation --skip-dependency-check --outdir "$work/out" "$work/src" >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; exit 1; }

sdist=$(cd "$work/out" && ls -- *.tar.gz)
whl=$(cd "$work/out" && ls -- *.whl)
# setuptools writes the sdist with the files' own times and the gzip
# header's; packed again as the release archives are, it is the commit's.
mkdir -p "$work/sdist"
tar -C "$work/sdist" -xzf "$work/out/$sdist"
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  -C "$work/sdist" -cf - "${sdist%.tar.gz}" | gzip -n -9 >"$OUT/$sdist"
install -m 0644 "$work/out/$whl" "$OUT/$whl"
echo "$OUT/$sdist"
echo "$OUT/$whl"
