#!/usr/bin/env bash
# The check script's own Lua cost (no Redis, no network: redis.call mocked),
# for a base revision and the working tree in interleaved rounds:
#   scripts/bench-lua.sh [-rounds N] [BASE_REV]
# Needs lua5.1 (Debian's lua5.1 package, the Lua that Redis embeds). Prints
# microseconds per fresh IPv4 login check, the median of the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5
if [ "${1:-}" = "-rounds" ]; then rounds=$2; shift 2; fi
base=${1:-HEAD}
if ! command -v lua5.1 >/dev/null; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    apt-get install -y -qq lua5.1 >/dev/null || { apt-get update -qq && apt-get install -y -qq lua5.1 >/dev/null; }
  else
    echo "bench-lua: needs lua5.1 (sudo apt-get install lua5.1)" >&2
    exit 1
  fi
fi
. scripts/check-script.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
assemble "$base" >"$dir/base.lua"
assemble "" >"$dir/new.lua"
b="" w=""
for _ in $(seq "$rounds"); do
  b+="$(lua5.1 scripts/bench-lua.lua "$dir/base.lua" 2>/dev/null) "
  w+="$(lua5.1 scripts/bench-lua.lua "$dir/new.lua" 2>/dev/null) "
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mb=$(echo "$b" | median) mw=$(echo "$w" | median)
echo "pure Lua per fresh login check (us), median of $rounds rounds: base $base $mb, working tree $mw ($(awk -v x="$mb" -v y="$mw" 'BEGIN {printf "%.2fx", y / x}'))"
echo "  rounds: base $b/ working tree $w"
