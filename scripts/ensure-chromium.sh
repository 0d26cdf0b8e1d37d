#!/usr/bin/env bash
# Makes sure a headless-capable Chromium is installed, from the system's
# packages (Debian's chromium), for the end-to-end test of
# examples/demo-login, which drives the demo in a headless browser. The test
# starts and stops its own browser.
set -euo pipefail
have() {
  command -v chromium >/dev/null || command -v chromium-browser >/dev/null ||
    command -v google-chrome >/dev/null
}
if have; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "ensure-chromium: installing chromium from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
  have && exit 0
  echo "ensure-chromium: the chromium package is installed but no browser is on PATH." >&2
else
  echo "ensure-chromium: no browser found (chromium, chromium-browser or google-chrome);" >&2
  echo "ensure-chromium: install one (e.g. sudo apt-get install chromium)." >&2
fi
echo "ensure-chromium: without it the demo's browser test is skipped (and fails when CI=true)." >&2
[ "${CI:-}" = "true" ] && exit 1
exit 0
