#!/usr/bin/env bash
# Why: stops the LocalStack process that start.sh launched (via its pid file) and waits until it has exited.
set -euo pipefail

DATA="${LOCALSTACK_DATA:-/tmp/sqs-gateway-localstack}"
PIDFILE="${LOCALSTACK_PIDFILE:-$DATA/localstack.pid}"

if [[ ! -f "$PIDFILE" ]]; then
  echo "stop.sh: no pid file at $PIDFILE, nothing to stop"
  exit 0
fi
pid="$(cat "$PIDFILE")"
if ! kill -0 "$pid" 2>/dev/null; then
  echo "stop.sh: process $pid is not running; removing stale pid file"
  rm -f "$PIDFILE"
  exit 0
fi
echo "stop.sh: stopping LocalStack (pid $pid)"
kill -TERM "$pid"
for _ in $(seq 1 30); do
  kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; echo "stop.sh: stopped"; exit 0; }
  sleep 1
done
echo "stop.sh: still running after 30s, sending SIGKILL"
kill -KILL "$pid" 2>/dev/null || true
rm -f "$PIDFILE"
