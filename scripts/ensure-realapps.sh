#!/usr/bin/env bash
# Makes sure the real software the end-to-end tests of e2e/ put the proxy in
# front of is installed, from Debian's packages: Django's admin
# (python3-django, run on /usr/bin/python3), DokuWiki (dokuwiki, served by
# php-cli's built-in server; php-cgi for its CGI-only helpers), and the
# attacker, hydra. --no-install-recommends keeps out the web servers the
# dokuwiki package recommends: the tests serve it with `php -S` on a free
# loopback port, and start and stop every process themselves.
set -euo pipefail
packages=(hydra python3-django dokuwiki php-cli php-cgi)
have() {
  command -v hydra >/dev/null && command -v php >/dev/null && command -v php-cgi >/dev/null &&
    [ -f /usr/share/dokuwiki/doku.php ] &&
    [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import django' 2>/dev/null
}
if have; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "ensure-realapps: installing ${packages[*]} from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
  have && exit 0
  echo "ensure-realapps: the packages are installed but something is still missing." >&2
else
  echo "ensure-realapps: install ${packages[*]} (e.g. sudo apt-get install --no-install-recommends ${packages[*]})." >&2
fi
echo "ensure-realapps: without them the tests of e2e/ are skipped (and fail when CI=true)." >&2
[ "${CI:-}" = "true" ] && exit 1
exit 0
