# shellcheck shell=bash
# What scripts/demo.sh and scripts/demo-express.sh share: choosing free
# loopback addresses (or checking the ones given), starting the processes
# with their output kept, and making sure the address answers from the
# process the script started, not from another program that held the port.
# Source it after setting DEMO_NAME (the prefix of every message); it needs
# bash and curl only.

# demo_fail MESSAGE [STATUS]: prints the message and exits (status 1).
demo_fail() {
  echo "$DEMO_NAME: $1" >&2
  exit "${2:-1}"
}

# demo_port_taken PORT HOST: true when something accepts connections there.
demo_port_taken() {
  local port=$1 host=${2:-127.0.0.1}
  host=${host#[}
  host=${host%]}
  (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

# demo_free_port: prints a port nothing listens on at 127.0.0.1 now, from
# the range above the usual services and below Linux's ephemeral ports.
demo_free_port() {
  local port
  for _ in $(seq 1 100); do
    port=$((20000 + RANDOM % 12000))
    if ! demo_port_taken "$port" 127.0.0.1; then
      echo "$port"
      return 0
    fi
  done
  demo_fail "found no free port on 127.0.0.1"
}

# demo_check_addr NAME ADDR: refuses an address that is not a loopback IP
# and port (127.0.0.0/8 or [::1]), and one whose port another program holds.
demo_check_addr() {
  local name=$1 addr=$2 host port
  if [[ $addr =~ ^(127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}|\[::1\]):([0-9]{1,5})$ ]]; then
    host=${BASH_REMATCH[1]} port=${BASH_REMATCH[2]}
  else
    demo_fail "$name=$addr is not a loopback IP and port such as 127.0.0.1:8080" 2
  fi
  if ((port < 1 || port > 65535)); then
    demo_fail "$name=$addr: no such port" 2
  fi
  if demo_port_taken "$port" "$host"; then
    demo_fail "$name=$addr: the port is taken by another program; choose another, or leave $name unset for a free one"
  fi
}

# demo_addrs: sets TOLLGATE_ADDR and DEMO_ADDR to the ones given, checked,
# or to free loopback ports, and prints them.
demo_addrs() {
  TOLLGATE_ADDR=${TOLLGATE_ADDR:-127.0.0.1:$(demo_free_port)}
  demo_check_addr TOLLGATE_ADDR "$TOLLGATE_ADDR"
  if [ -z "${DEMO_ADDR:-}" ]; then
    DEMO_ADDR=127.0.0.1:$(demo_free_port)
    while [ "$DEMO_ADDR" = "$TOLLGATE_ADDR" ]; do DEMO_ADDR=127.0.0.1:$(demo_free_port); done
  fi
  demo_check_addr DEMO_ADDR "$DEMO_ADDR"
  if [ "$DEMO_ADDR" = "$TOLLGATE_ADDR" ]; then
    demo_fail "TOLLGATE_ADDR and DEMO_ADDR are the same address" 2
  fi
  echo "$DEMO_NAME: tollgate on $TOLLGATE_ADDR, the demo on $DEMO_ADDR" >&2
}

# The processes the script started, and a directory for their binaries and
# output; demo_cleanup stops the processes and removes it.
DEMO_PIDS=()
DEMO_DIR=$(mktemp -d)
demo_cleanup() {
  for pid in "${DEMO_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${DEMO_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$DEMO_DIR"
}
trap demo_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# demo_wait NAME PID OUTPUT MARKER URL: waits (at most 10 s) until the file
# OUTPUT, where the process PID writes, holds MARKER — the line in which it
# says it listens on its address, written only once it holds the port — and
# then until URL answers while PID still runs. Another program on that port
# makes the process fail to listen, so it never writes MARKER: a curl
# answered by that program is never taken for the demo's.
demo_wait() {
  local name=$1 pid=$2 output=$3 marker=$4 url=$5
  for _ in $(seq 1 100); do
    if ! kill -0 "$pid" 2>/dev/null; then
      demo_fail "$name did not start (its output is above)"
    fi
    if grep -qF -- "$marker" "$output" 2>/dev/null; then
      if curl -fsS -o /dev/null "$url" 2>/dev/null && kill -0 "$pid" 2>/dev/null; then
        return 0
      fi
    fi
    sleep 0.1
  done
  demo_fail "$name did not answer at $url in 10 s"
}

# demo_wait_tollgate PID OUTPUT: demo_wait for tollgate, whose JSON log line
# "listening" names the address it holds.
demo_wait_tollgate() {
  demo_wait tollgate "$1" "$2" "\"msg\":\"listening\",\"addr\":\"$TOLLGATE_ADDR\"" "http://$TOLLGATE_ADDR/healthz"
}
