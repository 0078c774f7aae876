#!/usr/bin/env bash
# Runs the real-client scenarios (boto3 JSON 1.0, boto3 Query, aws-cli, Celery over both) three times: against LocalStack
# directly (the reference), and against the gateway in front of the embedded engine and of LocalStack;
# against each gateway also the sombus consumer loop (tests/clients/sombus_loop.py) set up with the CLI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN="${SQSGW_BIN:-target/debug/sqs-gateway}"
LOCALSTACK="${LOCALSTACK_ENDPOINT:-http://127.0.0.1:4566}"
work="$(mktemp -d)"
pids=()
# Stops every gateway this script started, and checks that none is left (each one's command line
# names its config in $work).
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if pgrep -f -- "--config $work/" >/dev/null; then
    echo "gateway.sh: gateways still running after the run:" >&2
    pgrep -af -- "--config $work/" >&2
    pkill -f -- "--config $work/" || true
    status=1
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

# The gateways' SQS endpoint secret (at least 16 characters): the clients sign with it. LocalStack
# checks no signature, and the gateways' backend calls keep LocalStack's test/test.
gateway_secret="gateway-clients-secret"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_gateway NAME BACKEND_TOML: starts the gateway and sets $endpoint. (Not in a $(...)
# subshell: its pid must reach this shell's `pids`, or the EXIT trap cannot stop it.)
endpoint=""
start_gateway() {
  local name=$1 backend=$2 port
  port="$(free_port)"
  cat > "$work/$name.toml" <<TOML
[server]
listen = "127.0.0.1:$port"

$backend

[[receipt_keys]]
id = 1
secret = "$("$BIN" new-receipt-key)"

[sqs_api]
manage_queues = true

[[sqs_api.credentials]]
access_key_id = "test"
secret = "$gateway_secret"

[sombus]
credentials_dir = "$work/$name-credentials"

[state]
dir = "$work/$name-state"

$admin_entry
TOML
  AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true \
    "$BIN" serve --config "$work/$name.toml" >"$work/$name.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && { endpoint="http://127.0.0.1:$port"; return; }
    sleep 0.1
  done
  echo "gateway.sh: the $name gateway did not start; its log:" >&2
  cat "$work/$name.log" >&2
  exit 1
}

# An admin key of the sombus API for the consumer-loop workspace (its hash goes in each config).
admin_output="$("$BIN" new-admin-key --workspace loop --role admin --name loop)"
admin_key="$(echo "$admin_output" | sed -n 's/^#   \(sqsgw_.*\)$/\1/p')"
admin_entry="$(echo "$admin_output" | grep -v '^#')"

passed=0 failed=0

# The sombus consumer loop (tests/clients/sombus_loop.py, a separate program): a connection made
# with the CLI, three stories published with the CLI through the SQS endpoint, one message
# released once; the loop receives, acknowledges and releases until all are handled in order.
sombus_loop() {
  local label=$1 base=$2 created client secret queue out
  echo "== sombus consumer loop against $label"
  export SQSGW_ENDPOINT="$base" SQSGW_ADMIN_KEY="$admin_key" SOMBUS_WORKSPACE=loop
  if ! created="$("$BIN" sombus connections create --name loop --output json 2>&1)"; then
    echo "$created"; failed=$((failed + 1)); return
  fi
  client="$(echo "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["client_id"])')"
  secret="$(echo "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["client_secret"])')"
  queue="$("$BIN" sombus connections show "$client" --output json | python3 -c 'import json,sys; print(json.load(sys.stdin)["queue"])')"
  for story in a b c; do
    for n in 1 2 3; do
      retry=false; [[ "$story$n" == b2 ]] && retry=true
      AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY="$gateway_secret" "$BIN" sombus publish --queue "$queue" \
        --message-type story.context --correlation-id "$story" --topic som.story.context \
        --payload "{\"n\": $n, \"retry\": $retry}" >/dev/null
    done
  done
  if out="$(python3 tests/clients/sombus_loop.py "$base" loop "$client" "$secret" 9 2>&1)"; then
    echo "    $out"; passed=$((passed + 1))
  else
    echo "$out"; failed=$((failed + 1))
  fi
  "$BIN" sombus connections remove "$client" >/dev/null || failed=$((failed + 1))
}
run() {
  local label=$1 endpoint=$2 target=$3 out
  echo "== clients against $label ($endpoint)"
  if out="$(SQS_ENDPOINT="$endpoint" SQS_TARGET="$target" AWS_ACCESS_KEY_ID=test \
    AWS_SECRET_ACCESS_KEY="$gateway_secret" bash tests/clients/run.sh 2>&1)"; then :; fi
  echo "$out" | grep -v '^    PASS'
  local last
  last="$(echo "$out" | tail -n 1)"
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    passed=$((passed + BASH_REMATCH[1])); failed=$((failed + BASH_REMATCH[2]))
  else
    failed=$((failed + 1))
  fi
}

run "LocalStack directly (reference)" "$LOCALSTACK" localstack
start_gateway embedded $'[backend]\nkind = "embedded"\nin_memory = true'
run "the gateway over the embedded engine" "$endpoint" aws
sombus_loop "the gateway over the embedded engine" "$endpoint"
start_gateway localstack "[backend]
kind = \"sqs\"
endpoint_url = \"$LOCALSTACK\"
region = \"us-east-1\""
run "the gateway over LocalStack" "$endpoint" localstack
sombus_loop "the gateway over LocalStack" "$endpoint"
echo "clients: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
