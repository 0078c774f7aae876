#!/usr/bin/env bash
# Why: the web console (/console) is a browser client of the basaltic API, so it is tested in a
# real browser: headless Chromium driven by Playwright (console_test.py) against gateways this
# script starts on free loopback ports, one over the embedded engine and one over LocalStack
# (through proxy.py, which the Metrics test pauses to make the gateway miss samples).
#
#   bash tests/console/run.sh
#
# Without Chromium it prints one SKIPPED line and exits 0, unless CI or SQSGW_TEST_REQUIRE_SERVICES
# is set: then it installs Chromium with apt-get (as root) or fails. Likewise without LocalStack
# the sqs backend is skipped, or fails when the services are required.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE/../.."
BIN="${SQSGW_BIN:-target/debug/sqs-gateway}"
LOCALSTACK="${LOCALSTACK_ENDPOINT:-http://127.0.0.1:4566}"
CHROMIUM="${CONSOLE_CHROMIUM:-/usr/bin/chromium}"
VENV="${CONSOLE_VENV:-$HOME/.cache/sqs-gateway/console-venv}"
REQ="$HERE/requirements.txt"
SHOTS="${CONSOLE_SCREENSHOTS:-target/console-screenshots}"
LOGS="${CONSOLE_LOGS:-${TMPDIR:-/tmp}/sqs-gateway-console}"
required=false
if [[ -n "${CI:-}" || -n "${SQSGW_TEST_REQUIRE_SERVICES:-}" ]]; then required=true; fi
started=$SECONDS

# A missing prerequisite: one SKIPPED line and success, or a failure when services are required.
skip_or_fail() {
  if $required; then
    echo "console: FAIL: $1 (required: CI or SQSGW_TEST_REQUIRE_SERVICES is set)" >&2
    exit 1
  fi
  echo "SKIPPED console tests: $1"
  exit 0
}

# --- Chromium
if [[ ! -x "$CHROMIUM" ]]; then
  if $required && [[ "$(id -u)" -eq 0 ]]; then
    echo "console: installing Chromium with apt-get"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
  [[ -x "$CHROMIUM" ]] || skip_or_fail "no Chromium at $CHROMIUM (apt-get install chromium)"
fi

# --- the gateway binary (built by cargo, never here)
if [[ ! -x "$BIN" ]]; then
  echo "console: FAIL: no gateway binary at $BIN (cargo build, or set SQSGW_BIN)" >&2
  exit 1
fi

# --- Playwright's venv, reinstalled only when requirements.txt (or the Python) changes
PYTHON_BIN="${CONSOLE_PYTHON:-$HOME/.pyenv/versions/3.13.0/bin/python}"
[[ -x "$PYTHON_BIN" ]] || PYTHON_BIN="$(command -v python3)"
stamp_of() { { sha256sum "$REQ" | cut -d' ' -f1; "$PYTHON_BIN" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1; }
STAMP="$(stamp_of)"
if [[ ! -x "$VENV/bin/python" || "$(cat "$VENV/.requirements-stamp" 2>/dev/null)" != "$STAMP" ]]; then
  echo "console: installing Playwright into $VENV"
  if [[ -e "$VENV" && ! -f "$VENV/pyvenv.cfg" ]]; then
    echo "console: FAIL: $VENV exists and is not a venv; not touching it" >&2
    exit 1
  fi
  "$PYTHON_BIN" -m venv --clear "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ"
  echo "$STAMP" > "$VENV/.requirements-stamp"
fi
PY="$VENV/bin/python"

# --- the run's processes: each one's command line names $work, so the cleanup can check none is left
work="$(mktemp -d "${TMPDIR:-/tmp}/sqsgw-console.XXXXXX")"
mkdir -p "$work/tmp" "$LOGS" "$SHOTS"
pids=()
cleanup() {
  local status=$? left
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  left="$(pgrep -f -- "$work/" || true)"
  if [[ -n "$left" ]]; then
    echo "console: processes still running after the run:" >&2
    ps -o pid=,args= -p "$(echo "$left" | paste -sd,)" >&2 || true
    # shellcheck disable=SC2086 # one pid a word
    kill $left 2>/dev/null || true
    status=1
  fi
  cp "$work"/*.log "$LOGS/" 2>/dev/null || true
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# --- keys: one that may do everything, one that may do everything but inspect, one that may only
# look; a receipt key
new_key() { # new_key NAME GRANT: sets key_value and key_entry
  local out
  out="$("$BIN" new-basaltic-key --grant "$2" --name "$1")"
  key_value="$(echo "$out" | sed -n 's/^#   \(.*\)$/\1/p')"
  key_entry="$(echo "$out" | grep -v '^#')"
  if [[ -z "$key_value" || -z "$key_entry" ]]; then
    echo "console: FAIL: cannot read the key from new-basaltic-key's output" >&2
    exit 1
  fi
}
new_key admin '*=*'
admin_key="$key_value" admin_entry="$key_entry"
new_key no-inspect '*=send,receive,delete,change_visibility,purge,read_metrics,manage_queues'
limited_key="$key_value" limited_entry="$key_entry"
new_key viewer '*=inspect,read_metrics'
viewer_key="$key_value" viewer_entry="$key_entry"
receipt_secret="$("$BIN" new-receipt-key)"

# start_gateway NAME BACKEND_TOML [BASALTIC_TOML]: checks the config, starts the gateway, sets
# $endpoint; BASALTIC_TOML goes into its [basaltic] section. (Not in a $(...) subshell: its pid
# must reach this shell's `pids`, or the EXIT trap cannot stop it.)
endpoint=""
start_gateway() {
  local name=$1 backend=$2 basaltic=${3:-} port config
  port="$(free_port)"
  config="$work/$name.toml"
  cat > "$config" <<TOML
[server]
listen = "127.0.0.1:$port"

$backend

[[receipt_keys]]
id = 1
secret = "$receipt_secret"

[sqs_api]
manage_queues = true

[sombus]
credentials_dir = "$work/$name-credentials"

[state]
dir = "$work/$name-state"

[basaltic]
metrics_interval_seconds = 1
all_queues = true
$basaltic

$admin_entry

$limited_entry

$viewer_entry
TOML
  if ! "$BIN" check-config --config "$config" >"$work/$name-check.log" 2>&1; then
    echo "console: FAIL: the $name gateway's config is refused:" >&2
    cat "$work/$name-check.log" >&2
    exit 1
  fi
  AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true \
    "$BIN" serve --config "$config" >"$work/$name-gateway.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 1 150); do
    if curl -fsS --max-time 1 "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
      endpoint="http://127.0.0.1:$port"
      return
    fi
    sleep 0.1
  done
  echo "console: FAIL: the $name gateway did not start; its log:" >&2
  cat "$work/$name-gateway.log" >&2
  exit 1
}

# start_proxy: proxy.py in front of LocalStack; sets proxy_endpoint and proxy_control.
start_proxy() {
  local listen control hostport
  listen="$(free_port)"
  control="$(free_port)"
  hostport="${LOCALSTACK#*://}"
  hostport="${hostport%%/*}"
  "$PY" "$HERE/proxy.py" --listen "$listen" --target "$hostport" --control "$control" --log "$work/proxy.log" &
  pids+=("$!")
  for _ in $(seq 1 50); do
    if "$PY" -c 'import socket,sys; s=socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1); s.sendall(b"status\n"); sys.exit(0 if s.recv(64).startswith(b"ok") else 1)' "$control" 2>/dev/null; then
      proxy_endpoint="http://127.0.0.1:$listen"
      proxy_control="$control"
      return
    fi
    sleep 0.1
  done
  echo "console: FAIL: the proxy in front of LocalStack did not start" >&2
  exit 1
}

failed_backends=()
summary=()
# run_backend NAME [PROXY_CONTROL]: the browser tests against $endpoint.
run_backend() {
  local name=$1 control=${2:-} rc=0 start=$SECONDS last
  echo "== console tests, $name backend ($endpoint)"
  env TMPDIR="$work/tmp" CONSOLE_URL="$endpoint" CONSOLE_BACKEND="$name" CONSOLE_ADMIN_KEY="$admin_key" \
    CONSOLE_LIMITED_KEY="$limited_key" CONSOLE_VIEWER_KEY="$viewer_key" CONSOLE_PROXY_CONTROL="$control" CONSOLE_SCREENSHOTS="$SHOTS" \
    CHROMIUM="$CHROMIUM" PYTHONUNBUFFERED=1 \
    "$PY" "$HERE/console_test.py" "$work/$name-run" 2>&1 | tee "$work/$name-tests.log" || rc=$?
  last="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$work/$name-tests.log" | tail -n1 || true)"
  summary+=("$name: ${last:-no result (exit $rc)} in $((SECONDS - start))s")
  if [[ $rc -ne 0 || -z "$last" ]]; then
    failed_backends+=("$name")
    echo "   the $name gateway's log, last lines ($LOGS/$name-gateway.log keeps it all):"
    tail -n 20 "$work/$name-gateway.log" | sed 's/^/   | /'
  fi
}

# sweep_test_queues: deletes the test queues (`it-`, and the gateway's reserved `sqsgw_bq_`) that the
# suites before this one left in LocalStack: the sqs gateway samples every queue LocalStack holds.
sweep_test_queues() {
  "$PY" - "$LOCALSTACK" <<'PY'
import json, sys, urllib.request
endpoint = sys.argv[1].rstrip("/")
def call(action, body):
    request = urllib.request.Request(endpoint + "/", data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": f"AmazonSQS.{action}",
        "Authorization": "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=0"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)
swept = 0
for prefix in ("it-", "sqsgw_bq_"):
    while True:
        urls = call("ListQueues", {"QueueNamePrefix": prefix, "MaxResults": 1000}).get("QueueUrls", [])
        for url in urls:
            call("DeleteQueue", {"QueueUrl": url})
            swept += 1
        if len(urls) < 1000:
            break
print(f"console: swept {swept} test queues left in LocalStack")
PY
}

# CONSOLE_BACKENDS: which gateways to test (default both).
backends="${CONSOLE_BACKENDS:-embedded sqs}"

# The embedded gateway also pushes its queue `push-demo` to a port nothing listens on: the queue
# page shows the subscription and its delivery log (attempts that end unreachable). Both gateways
# allow private networks, so the subscriptions the tests make post to that port too. Its queue
# `it-console-export-off` (the export test makes it) refuses bulk export.
if [[ " $backends " == *" embedded "* ]]; then
start_gateway embedded "[backend]
kind = \"embedded\"
in_memory = true

[queues.push-demo]

[push]
allow_private_networks = true

[[push.subscriptions]]
name = \"demo-hook\"
queue = \"push-demo\"
url = \"http://127.0.0.1:9/hook\"
secret = \"whsec_$(head -c 32 /dev/urandom | base64 | tr -d '\n')\"
timeout_seconds = 2" 'export_disabled = ["it-console-export-off"]'
run_backend embedded
fi

if [[ " $backends " != *" sqs "* ]]; then
  :
elif curl -fsS --max-time 3 "${LOCALSTACK%/}/_localstack/health" 2>/dev/null | grep -Eq '"sqs": *"(available|running)"'; then
  sweep_test_queues
  start_proxy
  start_gateway sqs "[backend]
kind = \"sqs\"
endpoint_url = \"$proxy_endpoint\"
region = \"us-east-1\"

[push]
allow_private_networks = true"
  run_backend sqs "$proxy_control"
elif $required; then
  echo "console: FAIL: LocalStack does not answer at $LOCALSTACK (the sqs backend's tests need it)"
  failed_backends+=(sqs)
else
  echo "SKIPPED console tests on the sqs backend: LocalStack does not answer at $LOCALSTACK"
fi

for line in "${summary[@]}"; do echo "console: $line"; done
echo "console: screenshots in $SHOTS, logs in $LOGS, $((SECONDS - started))s in all"
[[ ${#failed_backends[@]} -eq 0 ]]
