#!/usr/bin/env bash
# Packs the TypeScript client (clients/typescript, @tollgate/client with
# @tollgate/client/express) into its npm tarball, offline and reproducibly:
#
#   scripts/build-npm.sh [OUT] [VERSION]     (default build/npm; make release
#                                             calls it with DIST and VERSION)
#
# It compiles src/ with the package's own TypeScript into a staging copy
# (package.json without its scripts and dev tools, README.md, LICENSE,
# dist/: what "files" names), sets the version to VERSION (vX.Y.Z, without
# the v) when given, packs it with `npm pack --ignore-scripts` (npm writes
# every entry with one fixed time and mode, so one commit gives the same
# bytes), checks that LICENSE is inside, and prints the tarball's path:
# OUT/tollgate-client-<version>.tgz, which `npm install
# ./tollgate-client-<version>.tgz` installs with no registry.
# The tree is left as it was. The compiler comes from clients/typescript's
# node_modules, installed from npm's cache (`npm ci --offline`) when
# missing: run `npm ci` there once (make test-deps does) on a machine that
# has never fetched it.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-build/npm}
VERSION=${2:-}
NPM=${NPM:-npm}
pkg=clients/typescript
for tool in node "$NPM" tar; do
  command -v "$tool" >/dev/null || { echo "build-npm: $tool is not on PATH" >&2; exit 1; }
done
if [ -n "$VERSION" ] && ! [[ $VERSION =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "build-npm: VERSION must be vMAJOR.MINOR.PATCH[-PRE], not $VERSION" >&2
  exit 2
fi

umask 022
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -e "$pkg/node_modules/typescript/package.json" ]; then
  echo "build-npm: installing $pkg's dev tools from npm's cache (npm ci --offline)" >&2
  (cd "$pkg" && "$NPM" ci --offline --ignore-scripts --no-audit --no-fund >"$work/ci.log" 2>&1) || {
    cat "$work/ci.log" >&2
    echo "build-npm: npm's cache lacks them: run \`npm ci\` in $pkg once (make test-deps does)" >&2
    exit 1
  }
fi

stage=$work/package
mkdir -p "$stage"
install -m 0644 "$pkg/package.json" "$pkg/README.md" "$pkg/LICENSE" "$stage/"
node "$pkg/node_modules/typescript/bin/tsc" -p "$pkg/tsconfig.json" --outDir "$stage/dist" >"$work/tsc.log" 2>&1 ||
  { cat "$work/tsc.log" >&2; exit 1; }
# The package as installed needs neither the scripts that build it from
# source (npm would warn of an install script) nor its dev tools.
(cd "$stage" && "$NPM" pkg delete scripts devDependencies >/dev/null)
if [ -n "$VERSION" ]; then
  (cd "$stage" && "$NPM" pkg set "version=${VERSION#v}" >/dev/null)
fi
name=$(cd "$stage" && "$NPM" pack --ignore-scripts --pack-destination "$work" 2>"$work/pack.log" | tail -n 1) ||
  { cat "$work/pack.log" >&2; exit 1; }
tar -tzf "$work/$name" >"$work/list"
if ! grep -qx 'package/LICENSE' "$work/list"; then
  echo "build-npm: $name holds no LICENSE" >&2
  exit 1
fi
install -m 0644 "$work/$name" "$OUT/$name"
echo "$OUT/$name"
