# Sourced by the bench scripts: assemble REV prints the one-node check
# script of revision REV ("" = the working tree) as redisstore builds it
# (checkScript, opFunction): time.lua, each op script's body below its
# "--- op body" line as a function of (key, A, o, nargs), then check.lua.
# Revisions before time.lua started with effects replication alone; those
# before that marker wrapped the whole op scripts as functions of (KEYS,
# ARGV).
assemble() {
  local rev=$1 f
  show() { if [ -n "$rev" ]; then git show "$rev:authguard/redisstore/$1"; else cat "authguard/redisstore/$1"; fi; }
  if show backoff.lua | grep -q '^--- op body'; then
    if ! show time.lua 2>/dev/null; then
      echo 'if redis.replicate_commands then redis.replicate_commands() end'
    fi
    for f in b:backoff l:log r:rate; do
      echo "local function op_${f%%:*}(key, A, o, nargs)"
      show "${f#*:}.lua" | sed -n '/^--- op body/,$p' | sed '1s/^--- op body/--/'
      echo
      echo end
    done
  else
    for f in b:backoff l:log r:rate; do
      echo "local function op_${f%%:*}(KEYS, ARGV)"; show "${f#*:}.lua"; echo; echo end
    done
  fi
  show check.lua
}
