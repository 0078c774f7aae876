#!/usr/bin/env bash
# Why: starts LocalStack (SQS only, 127.0.0.1:4566) in the background without Docker, then creates the example queues.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${LOCALSTACK_VENV:-$HOME/.cache/sqs-gateway/localstack-venv}"
LOG="${LOCALSTACK_LOG:-/tmp/sqs-gateway-localstack.log}"
DATA="${LOCALSTACK_DATA:-/tmp/sqs-gateway-localstack}"
PIDFILE="${LOCALSTACK_PIDFILE:-$DATA/localstack.pid}"
HEALTH_URL="http://127.0.0.1:4566/_localstack/health"
TIMEOUT="${LOCALSTACK_START_TIMEOUT:-180}"

sqs_ready() {
  curl -fsS --max-time 2 "$HEALTH_URL" 2>/dev/null | grep -Eq '"sqs": *"(available|running)"'
}

"$HERE/install.sh"

if sqs_ready; then
  echo "start.sh: LocalStack already answers healthy on 127.0.0.1:4566, not starting another"
else
  if ss -ltnH 'sport = :4566' | grep -q .; then
    echo "start.sh: ERROR: port 4566 is taken but does not answer LocalStack health:" >&2
    ss -ltnp 'sport = :4566' >&2
    exit 1
  fi
  mkdir -p "$DATA" "$(dirname "$PIDFILE")"
  echo "start.sh: starting LocalStack (log: $LOG, pid file: $PIDFILE, data: $DATA)"
  # GATEWAY_SERVER=hypercorn: the default twisted server ignores the host of GATEWAY_LISTEN and binds 0.0.0.0.
  # SQS_ENDPOINT_STRATEGY=off + LOCALSTACK_HOST: queue URLs are http://127.0.0.1:4566/000000000000/NAME
  # (the default *.localhost.localstack.cloud names need public DNS, which these machines lack).
  # setsid + nohup (both exec, so $! is the python pid): survives the caller's terminal and Ctrl-C.
  SERVICES=sqs GATEWAY_LISTEN=127.0.0.1:4566 GATEWAY_SERVER=hypercorn DNS_ADDRESS=0 \
  LOCALSTACK_HOST=127.0.0.1:4566 SQS_ENDPOINT_STRATEGY=off \
  OVERRIDE_IN_DOCKER=0 FILESYSTEM_ROOT="$DATA/filesystem" SKIP_SSL_CERT_DOWNLOAD=1 DISABLE_EVENTS=1 \
    setsid nohup "$VENV/bin/python" -m localstack.runtime.main </dev/null >"$LOG" 2>&1 &
  pid=$!
  echo "$pid" > "$PIDFILE"
  start=$SECONDS
  until sqs_ready; do
    if ! kill -0 "$pid" 2>/dev/null || (( SECONDS - start >= TIMEOUT )); then
      echo "start.sh: ERROR: LocalStack (pid $pid) exited or was not healthy within ${TIMEOUT}s; log tail:" >&2
      tail -n 50 "$LOG" >&2
      kill "$pid" 2>/dev/null || true
      rm -f "$PIDFILE"
      exit 1
    fi
    sleep 1
  done
  echo "start.sh: LocalStack healthy after $((SECONDS - start))s (pid $pid)"
fi

# Check the listener is on 127.0.0.1:4566 only, never on all interfaces.
listeners="$(ss -ltnH 'sport = :4566' | awk '{print $4}')"
echo "start.sh: listeners on port 4566: $(echo $listeners)"
if echo "$listeners" | grep -Evq '^127\.0\.0\.1:4566$'; then
  echo "start.sh: ERROR: LocalStack listens on more than 127.0.0.1:4566 (see above); refusing to continue" >&2
  exit 1
fi

"$VENV/bin/python" "$HERE/init.py"
