#!/usr/bin/env bash
# Why: the tests' shared state store. Starts Debian's redis-server on loopback (port 6390, no
# persistence, data in /tmp) and a three-node Redis Cluster beside it (ports 6391-6393) if they
# are not answering already, installing the package first when it is missing; redis/stop.sh
# stops them.
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

CLUSTER_PORTS="${SQSGW_TEST_REDIS_CLUSTER_PORTS:-6391 6392 6393}"

# The cluster: three primaries, no replicas, the slots split between them.
start_cluster() {
  local first="${CLUSTER_PORTS%% *}"
  if redis-cli -p "$first" cluster info 2>/dev/null | grep -q "cluster_state:ok"; then
    echo "redis/start.sh: the cluster already answers on 127.0.0.1:$first"
    return 0
  fi
  local nodes=()
  for port in $CLUSTER_PORTS; do
    local dir="$DATA/cluster-$port"
    rm -rf "$dir"
    mkdir -p "$dir"
    redis-server --bind 127.0.0.1 --port "$port" --daemonize yes --pidfile "$dir/redis.pid" \
      --dir "$dir" --save "" --appendonly no --logfile "$dir/redis.log" \
      --cluster-enabled yes --cluster-config-file "$dir/nodes.conf" \
      --cluster-node-timeout 2000 --maxmemory 256mb --maxmemory-policy noeviction
    nodes+=("127.0.0.1:$port")
  done
  for port in $CLUSTER_PORTS; do
    for _ in $(seq 1 50); do
      redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
      sleep 0.1
    done
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >/dev/null
  for _ in $(seq 1 100); do
    if redis-cli -p "$first" cluster info 2>/dev/null | grep -q "cluster_state:ok"; then
      echo "redis/start.sh: a cluster of ${#nodes[@]} nodes answers on ${nodes[*]}"
      return 0
    fi
    sleep 0.1
  done
  echo "redis/start.sh: ERROR: the cluster did not come up within 10 s" >&2
  return 1
}

if redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG; then
  echo "redis/start.sh: redis already answers on 127.0.0.1:$PORT"
  start_cluster
  exit 0
fi
mkdir -p "$DATA"
redis-server --bind 127.0.0.1 --port "$PORT" --daemonize yes --pidfile "$PIDFILE" \
  --dir "$DATA" --save "" --appendonly no --logfile "$DATA/redis.log" \
  --maxmemory 1gb --maxmemory-policy noeviction
for _ in $(seq 1 50); do
  if redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG; then
    echo "redis/start.sh: redis answers on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"
    start_cluster
    exit 0
  fi
  sleep 0.1
done
echo "redis/start.sh: ERROR: redis did not answer within 5 s; log tail:" >&2
tail -20 "$DATA/redis.log" >&2 || true
exit 1
