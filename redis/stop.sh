#!/usr/bin/env bash
# Why: stops the redis-server processes that redis/start.sh launched (the single node and the
# cluster's nodes, via their pid files) and waits until each has exited.
set -euo pipefail

DATA="${SQSGW_TEST_REDIS_DATA:-/tmp/sqs-gateway-redis}"

stop_one() {
  local pidfile="$1"
  [[ -f "$pidfile" ]] || return 0
  local pid
  pid="$(cat "$pidfile")"
  if ! kill -0 "$pid" 2>/dev/null; then
    rm -f "$pidfile"
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

stopped=0
for pidfile in "$DATA/redis.pid" "$DATA"/cluster-*/redis.pid; do
  if [[ -f "$pidfile" ]]; then
    stop_one "$pidfile"
    stopped=$((stopped + 1))
  fi
done
if [[ "$stopped" -eq 0 ]]; then
  echo "redis/stop.sh: no pid file under $DATA, nothing to stop"
else
  echo "redis/stop.sh: stopped $stopped server(s)"
fi
