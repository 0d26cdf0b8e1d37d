#!/usr/bin/env bash
# check-login.sh — checks, from outside, that a login form calls tollgate as
# docs/integrate.md says. Run it against a staging login (it slows its test
# account for a few seconds, and with SPRAY=1 puts this machine's address
# behind a CAPTCHA on that login for the policy's ip_spray window):
#
#   LOGIN_URL=https://staging.example.com/login TEST_ACCOUNT=qa-user@example.com ./check-login.sh
#
# Settings (environment):
#   LOGIN_URL       where the login form posts (required)
#   TEST_ACCOUNT    an account that exists; wrong passwords are tried on it (required)
#   USER_FIELD      the form's account field (default: username)
#   PASSWORD_FIELD  the form's password field (default: password)
#   BODY            form (application/x-www-form-urlencoded, the default) or json
#   SPRAY=1         also check that the login does not take the client address
#                   from headers this client wrote (tries 12 made-up accounts)
#   MAX_WAIT        the longest Retry-After it will wait out, in seconds (default 20)
#
# Exit status 0 when every check passed, 1 when one failed, 2 on bad settings.
# Needs bash and curl. It prints no password it sends (they are random).
set -uo pipefail

: "${LOGIN_URL:?set LOGIN_URL to the URL your login form posts to}"
: "${TEST_ACCOUNT:?set TEST_ACCOUNT to an account that exists (it will be slowed for a few seconds)}"
USER_FIELD=${USER_FIELD:-username}
PASSWORD_FIELD=${PASSWORD_FIELD:-password}
BODY=${BODY:-form}
MAX_WAIT=${MAX_WAIT:-20}
case $BODY in form | json) ;; *) echo "BODY must be form or json" >&2; exit 2 ;; esac

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
failed=0
pass() { echo "ok    $*"; }
fail() { echo "FAIL  $*"; failed=1; }
random() { head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# post ACCOUNT [HEADER...]: one login attempt with a random wrong password.
# Sets status and retry_after; the body is in $tmp/body with the account
# replaced by ACCOUNT where it is quoted (a form field's value="…", a JSON
# string), so that a page that echoes it compares equal.
post() {
  local account=$1 password
  shift
  password=wrong-$(random)
  local args=(-sS -o "$tmp/raw" -D "$tmp/head" -w '%{http_code}' --max-time 30)
  for h in "$@"; do args+=(-H "$h"); done
  if [ "$BODY" = json ]; then
    args+=(-H 'Content-Type: application/json'
      --data-binary "{\"$USER_FIELD\":\"$account\",\"$PASSWORD_FIELD\":\"$password\"}")
  else
    args+=(--data-urlencode "$USER_FIELD=$account" --data-urlencode "$PASSWORD_FIELD=$password")
  fi
  status=$(curl "${args[@]}" "$LOGIN_URL") || { echo "FAIL  $LOGIN_URL does not answer" >&2; exit 1; }
  retry_after=$(tr -d '\r' <"$tmp/head" | sed -n 's/^[Rr][Ee][Tt][Rr][Yy]-[Aa][Ff][Tt][Ee][Rr]: *//p' | tail -n 1)
  sed -e "s|\"$account\"|\"ACCOUNT\"|g" -e "s|'$account'|'ACCOUNT'|g" "$tmp/raw" >"$tmp/body"
}

# 1. An unknown account and a wrong password get the same answer.
post "$TEST_ACCOUNT"
known_status=$status
cp "$tmp/body" "$tmp/known"
post "no-such-user-$(random)@example.invalid"
if [ "$status" = "$known_status" ] && cmp -s "$tmp/body" "$tmp/known"; then
  pass "an unknown account and a wrong password get the same answer ($status)"
else
  fail "an unknown account ($status) and a wrong password ($known_status) get different answers: the login tells which accounts exist"
fi

# 2. Wrong passwords get 429 with a Retry-After that grows.
waits=()
for _ in $(seq 1 40); do
  post "$TEST_ACCOUNT"
  if [ "$status" = 429 ]; then
    if ! [[ $retry_after =~ ^[1-9][0-9]*$ ]]; then
      fail "a 429 without a Retry-After in whole seconds (got '${retry_after}')"
      break
    fi
    waits+=("$retry_after")
    # Grown once the last wait is longer than the first. A third 429 is
    # asked for when the first two read alike: on a busy machine the time
    # between a failure and the next attempt can round the second wait down
    # (2 s less 1.1 s is 1), never the third (4 s).
    [ "${#waits[@]}" -ge 2 ] && [ "${waits[-1]}" -gt "${waits[0]}" ] && break
    [ "${#waits[@]}" -ge 3 ] && break
    if [ "$retry_after" -gt "$MAX_WAIT" ]; then
      fail "Retry-After $retry_after is over MAX_WAIT=$MAX_WAIT: reset the test account and run again"
      break
    fi
    sleep "$retry_after"
  fi
done
if [ "${#waits[@]}" -ge 2 ] && [ "${waits[-1]}" -gt "${waits[0]}" ]; then
  pass "wrong passwords get 429 with a growing Retry-After (${waits[*]} s)"
elif [ "${#waits[@]}" -eq 0 ]; then
  fail "40 wrong passwords and no 429: the login does not call check, or ignores a delay"
else
  fail "Retry-After did not grow (${waits[*]} s): does the login report each failure with its attempt token?"
fi

# 3. The client address is not taken from headers the client wrote.
if [ "${SPRAY:-}" = 1 ]; then
  run=$(random)
  first=""
  for i in $(seq 1 12); do
    post "spray-$i-$run@example.invalid" "X-Forwarded-For: 198.51.100.$i" "Forwarded: for=198.51.100.$i" \
      "X-Real-IP: 198.51.100.$i" "True-Client-IP: 198.51.100.$i" "CF-Connecting-IP: 198.51.100.$i"
    [ "$i" = 1 ] && { first=$status; cp "$tmp/body" "$tmp/first"; }
  done
  if [ "$status" != "$first" ] || ! cmp -s "$tmp/body" "$tmp/first"; then
    pass "12 accounts from one client with forged forwarding headers: the 12th is answered differently ($status)"
  else
    fail "12 accounts from one client, each with a forged X-Forwarded-For, all answered alike: the login takes the client address from a header this client wrote (read it only from your own proxies)"
  fi
fi

exit "$failed"
