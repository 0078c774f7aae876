#!/usr/bin/env bash
# Why: the tests' shared state store. Starts Debian's redis-server on loopback (port 6390, no
# persistence, data in /tmp) if it is not answering already, installing the package first when
# it is missing; redis/stop.sh stops it.
set -euo pipefail

PORT="${SQSGW_TEST_REDIS_PORT:-6390}"
DATA="${SQSGW_TEST_REDIS_DATA:-/tmp/sqs-gateway-redis}"
PIDFILE="$DATA/redis.pid"

if ! command -v redis-server >/dev/null; then
  echo "redis/start.sh: installing redis-server (Debian package)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # The package's own service is not started (policy-rc.d, or no init here): this script's
  # server is the only one.
  apt-get install -y -qq --no-install-recommends redis-server >/dev/null
  # Where a policy let the package start its own service, it is stopped: nothing is left running.
  if command -v service >/dev/null; then service redis-server stop >/dev/null 2>&1 || true; fi
fi

if redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG; then
  echo "redis/start.sh: redis already answers on 127.0.0.1:$PORT"
  exit 0
fi
mkdir -p "$DATA"
redis-server --bind 127.0.0.1 --port "$PORT" --daemonize yes --pidfile "$PIDFILE" \
  --dir "$DATA" --save "" --appendonly no --logfile "$DATA/redis.log" \
  --maxmemory 1gb --maxmemory-policy noeviction
for _ in $(seq 1 50); do
  if redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG; then
    echo "redis/start.sh: redis answers on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"
    exit 0
  fi
  sleep 0.1
done
echo "redis/start.sh: ERROR: redis did not answer within 5 s; log tail:" >&2
tail -20 "$DATA/redis.log" >&2 || true
exit 1
