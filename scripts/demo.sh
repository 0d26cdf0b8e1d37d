#!/usr/bin/env bash
# Builds and starts tollgate (memory store, built-in policy, the demo's
# breached-password corpus) and the demo login of examples/demo-login
# together, on free loopback ports, prints the demo's URL and stops both on
# Ctrl-C or when either ends.
#
# TOLLGATE_ADDR and DEMO_ADDR choose the addresses (loopback IP and port; by
# default a free port each, found at start). A port another program holds is
# refused, and the script checks that each address answers from the process
# it started (scripts/demo-lib.sh). Needs go and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DEMO_NAME=demo
# shellcheck source=scripts/demo-lib.sh
. scripts/demo-lib.sh

for tool in "$GO" curl; do
  command -v "$tool" >/dev/null || demo_fail "$tool is not on PATH"
done
demo_addrs

echo "demo: building tollgate and demo-login" >&2
"$GO" build -o "$DEMO_DIR/tollgate" ./cmd/tollgate
"$GO" build -o "$DEMO_DIR/demo-login" ./examples/demo-login

# The memory store and the built-in policy, no Redis; a config file with
# one webhook endpoint, the demo's POST /tollgate/events, under a secret
# made now, and the demo's small breached-password corpus, which lists bob's
# password as if it had leaked, so that his right password shows the
# step-up. Its log goes to the terminal and to a file demo_wait reads.
umask 077
echo "whsec_$(head -c 32 /dev/urandom | base64)" > "$DEMO_DIR/webhook-secret"
printf 'webhooks:\n  endpoints:\n    - name: demo\n      url: http://%s/tollgate/events\n      secret_file: %s\nbreached:\n  corpus: %s\n' \
  "$DEMO_ADDR" "$DEMO_DIR/webhook-secret" "$PWD/examples/demo-login/testdata/breached-corpus.txt" > "$DEMO_DIR/tollgate.yaml"
env -u TOLLGATE_REDIS_URL -u TOLLGATE_REDIS_CLUSTER_ADDRS -u TOLLGATE_REDIS_SENTINEL_ADDRS \
  TOLLGATE_CONFIG="$DEMO_DIR/tollgate.yaml" TOLLGATE_LISTEN="$TOLLGATE_ADDR" \
  "$DEMO_DIR/tollgate" serve 2> >(tee "$DEMO_DIR/tollgate.log" >&2) &
DEMO_PIDS+=($!)
demo_wait_tollgate "${DEMO_PIDS[0]}" "$DEMO_DIR/tollgate.log"

"$DEMO_DIR/demo-login" -listen "$DEMO_ADDR" -tollgate "http://$TOLLGATE_ADDR" \
  -webhook-secret-file "$DEMO_DIR/webhook-secret" \
  2> >(tee "$DEMO_DIR/demo-login.log" >&2) &
DEMO_PIDS+=($!)
demo_wait demo-login "${DEMO_PIDS[1]}" "$DEMO_DIR/demo-login.log" "demo-login: open http://$DEMO_ADDR/" "http://$DEMO_ADDR/login"

echo "demo: open http://$DEMO_ADDR/login (Ctrl-C stops tollgate and the demo)" >&2
# Returns when either process ends, or on Ctrl-C; the traps stop the other.
wait -n "${DEMO_PIDS[@]}"
