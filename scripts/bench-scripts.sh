#!/usr/bin/env bash
# Redis's own CPU per call (usec_per_call of EVALSHA in INFO commandstats) of
# the login check script, for two versions side by side in interleaved
# rounds, next to the reference issue 9 sets: one token-bucket take.
#
#   scripts/bench-scripts.sh [-rounds N] [-n CALLS] [BASE_REV]
#
# BASE_REV (default HEAD) is compared with the working tree. Each round
# flushes Redis and sends every case N times with redis-benchmark (20
# clients, no pipelining):
#   fresh  a login check on an account, an IPv4 address and attempts never
#          seen before (every op writes; four keys are created), with one
#          password fingerprint shared by every call (its log stays full);
#   hot    the same on one account held in backoff (every check refused);
#   bucket one token-bucket take (rate.lua) on one key: the reference;
#   bucketnew the same take on a key never seen (as a fresh check's keys are);
#   calls  the Redis commands a fresh check sends, with no Lua around them:
#          what the key layout costs by itself, whatever the scripts do;
#   merged the same for one key per subject (a layout not built), to size it;
#   floor5 one GET and one SET ... PX per key on the fresh check's five keys and
#          nothing else: what touching today's keys costs with no logic at all;
#   floor3 the same on three keys (account, address, password fingerprint), the
#          fewest a check with every signal can touch.
# Prints the median of the rounds per case and the ratios. Bounded: fixed
# call counts; the redis-server it starts listens on loopback and is stopped
# by PID at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 n=50000
while [ $# -gt 0 ]; do
  case $1 in
    -rounds) rounds=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    *) break ;;
  esac
done
base=${1:-HEAD}
./scripts/ensure-redis.sh
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize no --loglevel warning >/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

# shellcheck source=scripts/check-script.sh
. scripts/check-script.sh
assemble "$base" >"$dir/base.lua"
assemble "" >"$dir/new.lua"
# rate.lua as the store loads it: time.lua in front
cat authguard/redisstore/time.lua authguard/redisstore/rate.lua >"$dir/rate.lua"

# The 18 commands of a fresh check (MONITOR shows them), nothing else: the
# account's counter, the address's rules, then the full password log. The
# address's part is written two ways; the rest is the same in both.
account_lua=$(cat <<'LUA'
redis.call('TIME')
redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], "1|1796134374052|0||K8ROY8UuqqQBUAjrp2ubxQ", "PX", "86400000")
LUA
)
password_lua=$(cat <<'LUA'
redis.call('ZCARD', KEYS[5])
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', '1796047974052')
redis.call('ZSCORE', KEYS[5], ARGV[1])
redis.call('ZCOUNT', KEYS[5], '(1796130774052', '+inf')
redis.call('ZADD', KEYS[5], '1796134374052', ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[5], 0, 0)
redis.call('PEXPIRE', KEYS[5], '86400000')
return 1
LUA
)
{ echo "$account_lua"; cat <<'LUA'; echo "$password_lua"; } >"$dir/calls.lua"
redis.call('GET', KEYS[2])
redis.call('SET', KEYS[2], "1796134374102", "PX", "50")
for i = 3, 4 do
  redis.call('ZCARD', KEYS[i])
  redis.call('ZADD', KEYS[i], '1796134374052', ARGV[i - 2])
  redis.call('PEXPIRE', KEYS[i], '86400000')
end
LUA
# The same check with one key per subject (built, measured and not kept:
# docs/design.md §7, "Why a key per rule"): the address's bucket and both its
# logs in one sorted set, each rule in a score range of its own, so a fresh address costs one
# ZCARD, one ZADD of three members and one PEXPIRE. 13 commands, 2 keys made.
{ echo "$account_lua"; cat <<'LUA'; echo "$password_lua"; } >"$dir/merged.lua"
redis.call('ZCARD', KEYS[2])
redis.call('ZADD', KEYS[2], '10592227396102', 'r', '1796134374052', 's' .. ARGV[1], '6194180885156', 'f' .. ARGV[2])
redis.call('PEXPIRE', KEYS[2], '86400000')
LUA

# The floors: read and write each key once, with no logic and no sorted sets
# (the script tollgate-bench table times as floor3 too).
cp cmd/tollgate-bench/floor.lua "$dir/floor.lua"

cli() { redis-cli -p "$port" "$@"; }
usec() { cli info commandstats | grep -i '^cmdstat_evalsha:' | sed 's/.*usec_per_call=\([0-9.]*\).*/\1/'; }
bench() { # SCRIPT_FILE numkeys args... -> usec_per_call
  local sha
  sha=$(cli SCRIPT LOAD "$(cat "$1")"); shift
  cli config resetstat >/dev/null
  redis-benchmark -p "$port" -c 20 -n "$n" -r 100000000 -q EVALSHA "$sha" "$@" >/dev/null 2>&1
  usec
}
acct=tg:default:login:acct ip=tg:default:login
login_args() { # ACCOUNT_KEY -> the check script's keys and arguments for a fresh IPv4 login check
  echo 5 "$1" "$ip:iprate:__rand_int__J9yUIJz" "$ip:ipspray:__rand_int__J9yUIJz" "$ip:ipfail:__rand_int__J9yUIJz" "$ip:pwspray:Q340A_zFfhBI_CjH4CTedQ" \
    0 0 b d refund 11 charge 5 1000 2 1800000 86400000 Q340A_zFfhBI_CjH4CTedQ 86400000 '""' 1 K8ROY8UuqqQBUAjrp2ubxQ__rand_int__ \
    r d '""' 9 token_bucket take 0 50 200 1 '""' 1 0 \
    l c remove 9 admit WzkejON2s3pl453__rand_int__ 0 '""' 1 3600000 10 86400000 20 \
    l c remove 7 admit K8ROY8UuqqQBUAjr__rand_int__ 0 '""' 1 3600000 100 \
    l c remove 9 admit WzkejON2s3pl453__rand_int__ 0 '""' 1 3600000 10 86400000 20
}
run_case() { # SCRIPT CASE
  cli flushall >/dev/null
  case $2 in
    fresh) eval bench "$1" "$(login_args "$acct:__rand_int__zON2s3pl453nKFQP9g")" ;;
    hot)
      # ten failures just now: 32 s of delay, longer than a round
      now=$(cli time | head -1)000
      cli set "$acct:victim" "10|$now|$now||" px 600000 >/dev/null
      eval bench "$1" "$(login_args "$acct:victim")" ;;
    bucket) bench "$dir/rate.lua" 1 "$ip:iprate:one" token_bucket take 0 50 200 1 "" 1 0 ;;
    bucketnew) bench "$dir/rate.lua" 1 "$ip:iprate:__rand_int__J9yUIJz" token_bucket take 0 50 200 1 "" 1 0 ;;
    merged) bench "$dir/merged.lua" 5 "$acct:__rand_int__zON2s3pl453nKFQP9g" "$ip:ip:__rand_int__J9yUIJz" "$ip:unused:1" \
      "$ip:unused:2" "$ip:pwspray:Q340A_zFfhBI_CjH4CTedQ" WzkejON2s3pl453__rand_int__ K8ROY8UuqqQBUAjr__rand_int__ ;;
    floor5) bench "$dir/floor.lua" 5 "$acct:__rand_int__zON2s3pl453nKFQP9g" "$ip:iprate:__rand_int__J9yUIJz" "$ip:ipspray:__rand_int__J9yUIJz" \
      "$ip:ipfail:__rand_int__J9yUIJz" "$ip:pwspray:__rand_int__Q340A_zFfhBI" "1|1796134374052|0||K8ROY8UuqqQBUAjrp2ubxQ" ;;
    floor3) bench "$dir/floor.lua" 3 "$acct:__rand_int__zON2s3pl453nKFQP9g" "$ip:ip:__rand_int__J9yUIJz" \
      "$ip:pwspray:__rand_int__Q340A_zFfhBI" "1|1796134374052|0||K8ROY8UuqqQBUAjrp2ubxQ" ;;
    calls) bench "$dir/calls.lua" 5 "$acct:__rand_int__zON2s3pl453nKFQP9g" "$ip:iprate:__rand_int__J9yUIJz" "$ip:ipspray:__rand_int__J9yUIJz" \
      "$ip:ipfail:__rand_int__J9yUIJz" "$ip:pwspray:Q340A_zFfhBI_CjH4CTedQ" WzkejON2s3pl453__rand_int__ K8ROY8UuqqQBUAjr__rand_int__ ;;
  esac
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A got
for _ in $(seq "$rounds"); do
  for c in fresh hot; do
    got[$c,base]+="$(run_case "$dir/base.lua" $c) "
    got[$c,new]+="$(run_case "$dir/new.lua" $c) "
  done
  got[bucket]+="$(run_case "" bucket) "
  got[bucketnew]+="$(run_case "" bucketnew) "
  got[calls]+="$(run_case "" calls) "
  got[merged]+="$(run_case "" merged) "
  got[floor5]+="$(run_case "" floor5) "
  got[floor3]+="$(run_case "" floor3) "
done
b=$(echo "${got[bucket]}" | tr ' ' '\n' | grep . | median)
echo "Redis CPU per EVALSHA (usec_per_call), median of $rounds rounds of $n calls; base $base, new = working tree"
printf '%-8s %10s %10s %10s %12s\n' case base new new/base new/bucket
for c in fresh hot; do
  x=$(echo "${got[$c,base]}" | tr ' ' '\n' | grep . | median)
  y=$(echo "${got[$c,new]}" | tr ' ' '\n' | grep . | median)
  awk -v c=$c -v x="$x" -v y="$y" -v b="$b" 'BEGIN { printf "%-8s %10.2f %10.2f %9.2fx %11.1fx\n", c, x, y, y / x, y / b }'
  echo "  rounds: base ${got[$c,base]}/ new ${got[$c,new]}"
done
printf '%-8s %10s %10.2f\n' bucket "" "$b"
echo "  rounds: ${got[bucket]}"
for c in bucketnew calls merged floor5 floor3; do
  m=$(echo "${got[$c]}" | tr ' ' '\n' | grep . | median)
  awk -v c=$c -v k="$m" -v b="$b" 'BEGIN { printf "%-8s %10s %10.2f %10s %11.1fx\n", c, "", k, "", k / b }'
  echo "  rounds: ${got[$c]}"
done
