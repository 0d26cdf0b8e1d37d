#!/usr/bin/env bash
# The floor of a fresh check on a Cluster, in one command:
#   scripts/bench-cluster-floor.sh [-n CALLS] [-P DEPTH] [-rounds N]
# What Redis alone spends on the script calls of one fresh login check
# (account, address, password fingerprint), with nothing of tollgate
# around them: starts on free loopback ports a redis-server ("plain") and a
# cluster-enabled one owning every slot ("cluster"), captures the calls of
# one fresh check on one node (1 call) and on a Cluster with subject hash
# tags (one call a subject: 3) with TestCaptureFreshCheckCalls in
# authguard/redisstore, loads their scripts on both servers, and replays
# each call with redis-benchmark (50 clients, CALLS calls, every key made
# fresh with __rand_int__; a one-node call's keys, which lie in many slots,
# under one hash tag on the cluster-enabled server), alone (-P 1) and
# pipelined (-P DEPTH), in interleaved rounds, with an empty EVALSHA
# (return 1, one key) for the cost of a call itself. Redis CPU a call is
# INFO cpu's (user + sys) over the replay: reading, parsing and answering
# each call too. Prints the medians over the rounds, the Cluster's calls
# over one node's script, and cluster mode's cost over plain's. Stops the
# servers it started, by PID, at the end, on failure or on Ctrl-C; a
# replay is bounded by timeout, and no round starts after 150 s.
# Defaults: -n 20000 -P 16 -rounds 5, about 70 s on the project's
# 2-core VM. -P 1 and -P 16 are the two ends: each call read and answered
# on its own, or many to a read and a write, as in shared round trips with
# many checks in flight; a call's own cost (the empty EVALSHA) shrinks
# with the depth, and with it the Cluster's excess.
set -euo pipefail
cd "$(dirname "$0")/.."
N=20000 P=16 ROUNDS=5
while [ $# -gt 0 ]; do
  case "$1" in
    -n) N=$2; shift 2 ;;
    -P) P=$2; shift 2 ;;
    -rounds) ROUNDS=$2; shift 2 ;;
    *) echo "usage: $0 [-n CALLS] [-P DEPTH] [-rounds N]" >&2; exit 2 ;;
  esac
done
./scripts/ensure-redis.sh
command -v redis-server >/dev/null || { echo "bench-cluster-floor: redis-server is missing" >&2; exit 1; }
command -v redis-benchmark >/dev/null || { echo "bench-cluster-floor: redis-benchmark is missing (apt-get install redis-tools)" >&2; exit 1; }

dir=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# freeport [cluster]: a free loopback port; for a cluster-enabled server
# one whose bus port (10000 above) is free too, so at most 55535.
freeport() {
  python3 - "${1:-}" <<'PY'
import socket, sys
for _ in range(100):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    if sys.argv[1] != "cluster":
        print(p); sys.exit(0)
    if p > 55535:
        continue
    try:
        socket.socket().bind(("127.0.0.1", p + 10000))
    except OSError:
        continue
    print(p); sys.exit(0)
sys.exit("no free port")
PY
}
start() { # name port extra-args…
  local name=$1 port=$2
  shift 2
  mkdir -p "$dir/$name"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
    --dir "$dir/$name" --logfile "$dir/$name/redis.log" --loglevel warning "$@" &
  pids+=($!)
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "bench-cluster-floor: $name redis-server on $port did not answer within 5s" >&2
  exit 1
}
plain=$(freeport)
start plain "$plain"
cluster=$(freeport cluster)
start cluster "$cluster" --cluster-enabled yes --cluster-config-file "$dir/cluster/nodes.conf" --cluster-announce-ip 127.0.0.1
redis-cli -p "$cluster" cluster addslotsrange 0 16383 >/dev/null
for _ in $(seq 50); do
  redis-cli -p "$cluster" cluster info | grep -q '^cluster_state:ok' && break
  sleep 0.1
done
redis-cli -p "$cluster" cluster info | grep -q '^cluster_state:ok' || { echo "bench-cluster-floor: the cluster-enabled server is not ok" >&2; exit 1; }

echo "== capturing one fresh check's calls (go test -run '^TestCaptureFreshCheckCalls\$' ./authguard/redisstore/)"
mkdir "$dir/calls"
TOLLGATE_FLOOR_CAPTURE="$dir/calls" TOLLGATE_FLOOR_REDIS="127.0.0.1:$plain" TOLLGATE_FLOOR_CLUSTER="127.0.0.1:$cluster" \
  timeout 120 go test -short -count=1 -v -run '^TestCaptureFreshCheckCalls$' ./authguard/redisstore/ | grep -E 'call [0-9]+:|^(ok|FAIL|---)' | sed 's/^ *//'
[ -e "$dir/calls/one-node-1.args" ] && [ -e "$dir/calls/cluster-1.args" ] || { echo "bench-cluster-floor: nothing captured" >&2; exit 1; }
printf '1\n{floor}empty\n' > "$dir/calls/empty.args"
echo 'return 1' > "$dir/calls/empty.lua"

# The calls to replay: one node's, the Cluster's in the order sent, the
# empty one. Each script is loaded on both servers.
calls=(one-node-1)
for f in "$dir"/calls/cluster-*.args; do calls+=("$(basename "$f" .args)"); done
calls+=(empty)
declare -A sha label
for c in "${calls[@]}"; do
  sha[$c]=$(redis-cli -p "$plain" -x script load < "$dir/calls/$c.lua")
  [ "$(redis-cli -p "$cluster" -x script load < "$dir/calls/$c.lua")" = "${sha[$c]}" ] || { echo "bench-cluster-floor: $c loaded differently" >&2; exit 1; }
  mapfile -t a < "$dir/calls/$c.args"
  kinds=() # the keys' names without prefix and subject: iprate, acct…
  for k in "${a[@]:1:${a[0]}}"; do k=${k%%:\{*}; kinds+=("${k##*:}"); done
  label[$c]="$c: ${a[0]} key(s): $(IFS=,; echo "${kinds[*]}" | sed 's/,/, /g')"
done
label[one-node-1]="one node's check: its 1 call, $(head -1 "$dir/calls/one-node-1.args") keys"
label[empty]="empty EVALSHA (return 1), 1 key"

cpu() { redis-cli -p "$1" info cpu | awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%.0f", s * 1e6}'; }
failed() { redis-cli -p "$1" info commandstats | awk -F'[,=:]' '/^cmdstat_evalsha:/ {for (i = 1; i < NF; i++) if ($i == "failed_calls" || $i == "rejected_calls") s += $(i+1)} END {print s + 0}'; }
replay() { # port call depth: prints Redis CPU µs a call
  local port=$1 c=$2 depth=$3
  mapfile -t a < "$dir/calls/$c.args"
  local nk=${a[0]} cmd=(EVALSHA "${sha[$c]}" "${a[0]}") i k
  for ((i = 1; i <= nk; i++)); do
    k=${a[$i]}
    [[ $k == *"{"* ]] || k="{floor}$k" # one node's keys: one slot on the cluster-enabled server
    cmd+=("$k.__rand_int__")
  done
  cmd+=("${a[@]:nk+1}")
  redis-cli -p "$port" flushall >/dev/null
  redis-cli -p "$port" config resetstat >/dev/null
  local c0 c1
  c0=$(cpu "$port")
  timeout 60 redis-benchmark -p "$port" -c 50 -P "$depth" -n "$N" -r 100000000 "${cmd[@]}" >/dev/null 2>&1 ||
    { echo "bench-cluster-floor: redis-benchmark failed on $c" >&2; exit 1; }
  c1=$(cpu "$port")
  local f
  f=$(failed "$port")
  [ "$f" = 0 ] || { echo "bench-cluster-floor: $f of $c's replayed calls failed" >&2; exit 1; }
  awk -v c0="$c0" -v c1="$c1" -v n="$N" 'BEGIN {printf "%.2f", (c1 - c0) / n}'
}

echo "== replaying: redis-benchmark -c 50 -n $N -r 100000000, alone (-P 1) and pipelined (-P $P), $ROUNDS rounds"
: > "$dir/results"
for ((r = 1; r <= ROUNDS; r++)); do
  if [ "$SECONDS" -gt 150 ]; then
    echo "bench-cluster-floor: stopping after $((r - 1)) rounds (150 s)" >&2
    break
  fi
  for depth in 1 "$P"; do
    for server in plain cluster; do
      port=$plain
      [ "$server" = cluster ] && port=$cluster
      for c in "${calls[@]}"; do
        us=$(replay "$port" "$c" "$depth")
        echo "$r $depth $server $c $us" >> "$dir/results"
      done
    done
  done
  echo "round $r done (${SECONDS}s)"
done

[ -s "$dir/results" ] || { echo "bench-cluster-floor: no round measured" >&2; exit 1; }

# The table: medians over the rounds, of each call and of the sum of the
# Cluster's calls in each round.
labels=$(for c in "${calls[@]}"; do printf '%s\t%s\n' "$c" "${label[$c]}"; done)
awk -v P="$P" -v labels="$labels" '
function median(key,    n, i, j, v, t) {
  n = cnt[key]
  for (i = 1; i <= n; i++) v[i] = val[key, i]
  for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
  return n % 2 ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2
}
function add(key, x) { val[key, ++cnt[key]] = x }
{
  add($2 " " $3 " " $4, $5)
  if ($4 ~ /^cluster-/) sum[$1 " " $2 " " $3] += $5
  if ($4 != "empty") all[$1 " " $2 " " $3] += $5
  if ($4 == "one-node-1") one[$1 " " $2 " " $3] = $5
  if (!($1 in rounds)) { rounds[$1] = 1; nr++ }
}
END {
  for (k in sum) { split(k, f, " "); add(f[2] " " f[3] " clustersum", sum[k]) }
  for (k in all) { split(k, f, " "); add(f[2] " " f[3] " all", all[k]) }
  printf "\nRedis CPU µs a call (INFO cpu), medians of %d rounds; alone -P 1, pipelined -P %d\n\n", nr, P
  printf "| call | plain, alone | cluster-enabled, alone | plain, -P %d | cluster-enabled, -P %d |\n|---|---|---|---|---|\n", P, P
  n = split(labels, L, "\n")
  for (i = 1; i <= n; i++) {
    split(L[i], kv, "\t")
    if (kv[1] == "empty") continue
    row(kv[1], kv[2])
  }
  row("clustersum", "the Cluster'"'"'s check: its calls together")
  for (i = 1; i <= n; i++) { split(L[i], kv, "\t"); if (kv[1] == "empty") row("empty", kv[2]) }
  a1 = median("1 cluster clustersum") / median("1 plain one-node-1")
  aP = median(P " cluster clustersum") / median(P " plain one-node-1")
  printf "\nthe Cluster'"'"'s calls (cluster-enabled) ÷ one node'"'"'s script (plain): %.2fx alone, %.2fx pipelined (-P %d)\n", a1, aP, P
  printf "  each round: alone"
  for (r = 1; r <= nr; r++) printf " %.2fx", sum[r " 1 cluster"] / one[r " 1 plain"]
  printf "; pipelined"
  for (r = 1; r <= nr; r++) printf " %.2fx", sum[r " " P " cluster"] / one[r " " P " plain"]
  printf "\n"
  printf "the same on one server: plain %.2fx / %.2fx, cluster-enabled %.2fx / %.2fx\n", \
    median("1 plain clustersum") / median("1 plain one-node-1"), median(P " plain clustersum") / median(P " plain one-node-1"), \
    median("1 cluster clustersum") / median("1 cluster one-node-1"), median(P " cluster clustersum") / median(P " cluster one-node-1")
  printf "cluster mode (cluster-enabled ÷ plain, every captured call): %+.0f%% alone, %+.0f%% pipelined\n", \
    (median("1 cluster all") / median("1 plain all") - 1) * 100, (median(P " cluster all") / median(P " plain all") - 1) * 100
}
function row(c, name) {
  printf "| %s | %.1f | %.1f | %.1f | %.1f |\n", name, median("1 plain " c), median("1 cluster " c), median(P " plain " c), median(P " cluster " c)
}' "$dir/results"
