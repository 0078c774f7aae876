#!/usr/bin/env bash
# Why: stops the redis-server that redis/start.sh launched (via its pid file) and waits until it
# has exited.
set -euo pipefail

DATA="${SQSGW_TEST_REDIS_DATA:-/tmp/sqs-gateway-redis}"
PIDFILE="$DATA/redis.pid"

if [[ ! -f "$PIDFILE" ]]; then
  echo "redis/stop.sh: no pid file at $PIDFILE, nothing to stop"
  exit 0
fi
pid="$(cat "$PIDFILE")"
if ! kill -0 "$pid" 2>/dev/null; then
  rm -f "$PIDFILE"
  exit 0
fi
kill -TERM "$pid"
for _ in $(seq 1 50); do
  kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; echo "redis/stop.sh: stopped"; exit 0; }
  sleep 0.1
done
kill -KILL "$pid" 2>/dev/null || true
rm -f "$PIDFILE"
