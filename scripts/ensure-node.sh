#!/usr/bin/env bash
# Makes sure Node.js (>= 18) and npm are installed, from the system's packages
# (Debian's nodejs and npm), for the TypeScript client's tests, the contract
# check (openapi-typescript, redocly) and the Express demo's browser test.
# Their packages come from the npm registry, pinned by each package-lock.json
# and installed with `npm ci` by `make test`.
set -euo pipefail
have() {
  command -v node >/dev/null && command -v npm >/dev/null &&
    node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)'
}
if have; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "ensure-node: installing nodejs and npm from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq nodejs npm >/dev/null
  have && exit 0
  echo "ensure-node: nodejs is installed but is older than 18, or npm is missing." >&2
else
  echo "ensure-node: Node.js >= 18 and npm are needed (e.g. sudo apt-get install nodejs npm)." >&2
fi
exit 1
