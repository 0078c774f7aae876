#!/usr/bin/env bash
# Why: the OpenAPI documents the gateway serves (/openapi/{ezgh,sombus,basaltic}.json) are a contract;
# schemathesis, a property-based API tester, holds the running gateway to it: requests made from each
# document (valid ones and invalid ones) must get no 5xx, only documented statuses, content types
# and headers, and answers that match their schemas. One gateway over the embedded engine in memory,
# with real queues and keys so requests reach the handlers; the ezgh and basaltic contracts run here,
# then every tests/clients/contract/*.sh (the sombus one), with ENDPOINT, BIN, WORK, SCHEMATHESIS,
# SOMBUS_ADMIN_KEY and SOMBUS_WORKSPACE in the environment. Builds nothing: it runs
# ${SQSGW_BIN:-target/debug/sqs-gateway}.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
started=$SECONDS
HERE=tests/clients
REQ="$HERE/contract-requirements.txt"
VENV="${CONTRACT_VENV:-$HOME/.cache/sqs-gateway/contract-venv}"
LOGS="${CONTRACT_LOGS:-${TMPDIR:-/tmp}/sqs-gateway-contract}"
PYTHON_BIN="${CONTRACT_PYTHON:-python3}"
BIN="${SQSGW_BIN:-target/debug/sqs-gateway}"
# Test cases per operation and phase: bounded so the whole run takes a few minutes on 2 cores.
MAX_EXAMPLES="${CONTRACT_MAX_EXAMPLES:-40}"
# One seed: the same requests every run (a failure found once is found again).
SEED="${CONTRACT_SEED:-20250611}"

# --- schemathesis's venv, reinstalled only when contract-requirements.txt (or the Python) changes
stamp_of() { { sha256sum "$REQ" | cut -d' ' -f1; "$PYTHON_BIN" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1; }
STAMP="$(stamp_of)"
if [[ ! -x "$VENV/bin/schemathesis" || "$(cat "$VENV/.requirements-stamp" 2>/dev/null)" != "$STAMP" ]]; then
  echo "contract.sh: installing schemathesis into $VENV"
  if [[ -e "$VENV" && ! -f "$VENV/pyvenv.cfg" ]]; then
    echo "contract.sh: ERROR: $VENV exists and is not a venv; not touching it" >&2
    exit 1
  fi
  "$PYTHON_BIN" -m venv --clear "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ"
  echo "$STAMP" > "$VENV/.requirements-stamp"
fi
SCHEMATHESIS="$VENV/bin/schemathesis"

if [[ ! -x "$BIN" ]]; then
  echo "contract.sh: ERROR: no gateway binary at $BIN (cargo build, or set SQSGW_BIN)" >&2
  exit 1
fi

work="$(mktemp -d)"
pid=""
# Stops the gateway this script started, and checks that none is left (its command line names its
# config in $work).
cleanup() {
  local status=$?
  if [[ -n "$pid" ]]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if pgrep -f -- "--config $work/" >/dev/null; then
    echo "contract.sh: a gateway is still running after the run:" >&2
    pgrep -af -- "--config $work/" >&2
    status=1
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
secret_of() { sed -n 's/^#   \(sqsgw_.*\)$/\1/p'; }

# --- the keys: ezgh (receive on every queue), basaltic (every permission on every queue), sombus admin
ezgh_output="$("$BIN" new-api-key --organization contract --name contract --receive-on '*')"
ezgh_key="$(echo "$ezgh_output" | secret_of)"
basaltic_output="$("$BIN" new-basaltic-key --name contract)"
basaltic_key="$(echo "$basaltic_output" | secret_of)"
admin_output="$("$BIN" new-admin-key --workspace contract --role admin --name contract)"
admin_key="$(echo "$admin_output" | secret_of)"
sqs_secret="contract-secret-$RANDOM$RANDOM"  # 16 characters at least

port="$(free_port)"
cat > "$work/gateway.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
# schemathesis sends hundreds of made-up receipt handles a minute from one address: with the
# default budget (100 a minute) most acknowledgements would answer 429, and the valid ones would
# not be tested. The 429 itself is tested in tests/it (http/ezgh/receipts.rs).
invalid_handles_per_minute = 1000000

[backend]
kind = "embedded"
in_memory = true

[[receipt_keys]]
id = 1
secret = "$("$BIN" new-receipt-key)"

[queues."contract-events.fifo"]
content_based_deduplication = true

[ezgh.organizations.contract.projects.shop]
queues = { events = "contract-events.fifo" }

$(echo "$ezgh_output" | grep -v '^#')

$(echo "$basaltic_output" | grep -v '^#')

[[sqs_api.credentials]]
access_key_id = "contract"
secret = "$sqs_secret"

[sombus]
credentials_dir = "$work/credentials"

$(echo "$admin_output" | grep -v '^#')
TOML
"$BIN" serve --config "$work/gateway.toml" >"$work/gateway.log" 2>&1 &
pid=$!
ENDPOINT="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
  curl -fsS "$ENDPOINT/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
if ! curl -fsS "$ENDPOINT/healthz" >/dev/null 2>&1; then
  echo "contract.sh: the gateway did not start; its log:" >&2
  cat "$work/gateway.log" >&2
  exit 1
fi

# --- what the requests need to reach the handlers: messages in the ezgh queue, basaltic queues
# sqs ACTION JSON: one SQS JSON 1.0 call through the gateway's own endpoint, signed by curl.
sqs() {
  curl -fsS --aws-sigv4 "aws:amz:us-east-1:sqs" --user "contract:$sqs_secret" \
    -H "X-Amz-Target: AmazonSQS.$1" -H "Content-Type: application/x-amz-json-1.0" \
    --data "$2" "$ENDPOINT/" >/dev/null
}
# fill QUEUE N [FIFO]: N messages in batches of ten, each FIFO one in a group of its own. Enough
# that receives keep finding some: a receive that finds none waits out its long poll (the coverage
# phase tries the longest, 20 s).
fill() {
  local queue=$1 count=$2 fifo=${3:-} batch entries n
  for batch in $(seq 1 $((count / 10))); do
    entries=""
    for n in $(seq 1 10); do
      entries+="${entries:+,}{\"Id\":\"m$n\",\"MessageBody\":\"contract $batch.$n\""
      entries+=",\"MessageAttributes\":{\"kind\":{\"DataType\":\"String\",\"StringValue\":\"test\"}}"
      [[ -n "$fifo" ]] && entries+=",\"MessageGroupId\":\"g$batch-$n\""
      entries+="}"
    done
    sqs SendMessageBatch "{\"QueueUrl\":\"$ENDPOINT/000000000000/$queue\",\"Entries\":[$entries]}"
  done
}
fill contract-events.fifo 1000 fifo

# basaltic QUEUE NAME [TYPE]: creates a basaltic queue, prints its id.
basaltic_queue() {
  curl -fsS -X POST "$ENDPOINT/v1/queues" -H "Authorization: Bearer $basaltic_key" \
    -H "Content-Type: application/json" \
    --data "{\"name\": \"$1\", \"type\": \"${2:-standard}\"}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["result"]["id"])'
}
standard_id="$(basaltic_queue contract-standard)"
victim_id="$(basaltic_queue contract-victim)"
settings_id="$(basaltic_queue contract-settings)"
purged_id="$(basaltic_queue contract-purged)"
# 1,500 messages in the standard queue (see fill), with an attribute of each type.
for batch in $(seq 1 150); do
  entries=""
  for n in $(seq 1 10); do
    entries+="${entries:+,}{\"id\": \"m$n\", \"body\": \"contract $batch.$n\", \"attributes\": {"
    entries+="\"kind\": {\"type\": \"String\", \"value\": \"test\"}, \"n\": {\"type\": \"Number\", \"value\": \"$n\"},"
    entries+=" \"raw\": {\"type\": \"Binary\", \"value\": \"AQID\"}}}"
  done
  curl -fsS -X POST "$ENDPOINT/v1/queues/$standard_id/messages/batch" -H "Authorization: Bearer $basaltic_key" \
    -H "Content-Type: application/json" --data "{\"entries\": [$entries]}" >/dev/null
done

export ENDPOINT BIN WORK="$work" SCHEMATHESIS SOMBUS_ADMIN_KEY="$admin_key" SOMBUS_WORKSPACE=contract
export EZGH_KEY="$ezgh_key" BASALTIC_KEY="$basaltic_key"

# --- the schemathesis configs (auth, fixed parameters, and what each check expects); what a
# failed run records for `schemathesis replay` goes with the logs, not into the working tree.
cache="[cache]
directory = \"$LOGS/cache\""

# ezgh: the key, and the project's FIFO queue in the receive path (its messages carry every field,
# groupId and seq too).
cat > "$work/ezgh.toml" <<TOML
$cache

[auth.openapi.bearer]
bearer = "\${EZGH_KEY}"

[parameters]
"path.organization" = "contract"
"path.project" = "shop"
"path.queue" = "events"
TOML

# basaltic, examples, coverage and fuzzing: every operation on a queue works on the standard queue
# (with messages), but those that would change what the others find there: DeleteQueue, PurgeQueue
# and UpdateQueue (a receive wait, a delay) each have a queue of their own.
# Schema-valid requests that are still refused: the schema cannot say everything the API checks,
# so positive_data_acceptance takes these operations' documented 400s too:
# - a receipt made up by the generator has the form of one, but is none of the queue's:
#   `400 receipt_handle_invalid` (DeleteMessage, ChangeMessageVisibility);
# - what depends on the queue's type, which the request does not carry: `group_id`,
#   `deduplication_id` and `delay_seconds` on send, `content_based_deduplication: true` on a
#   standard queue (UpdateQueue), a dead-letter queue of the other type (CreateQueue,
#   UpdateQueue); and `content_based_deduplication: true` with `type: standard` (CreateQueue);
# - limits in bytes where JSON Schema counts characters, and a Number's significant digits and
#   magnitude (SendMessage);
# - ids used twice in one batch: JSON Schema has no "unique by this field" (the three batches);
# - a push subscription's rules across fields and beyond the schema: a lease longer than the
#   timeout, `hold_on_202` only with the wrapped body, the URL's scheme, host and credentials, a
#   change that names no field (CreateSubscription, UpdateSubscription).
# Their other answers are held to the schema like every answer.
basaltic_checks='[[operations]]
include-operation-id = [
  "DeleteMessage", "ChangeMessageVisibility", "SendMessage", "CreateQueue", "UpdateQueue",
  "SendMessageBatch", "DeleteMessageBatch", "ChangeMessageVisibilityBatch",
  "CreateSubscription", "UpdateSubscription",
]
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]'
cat > "$work/basaltic.toml" <<TOML
$cache

[auth.openapi.bearer]
bearer = "\${BASALTIC_KEY}"

[parameters]
"path.queue_id" = "$standard_id"

[[operations]]
include-operation-id = "DeleteQueue"
parameters = { "path.queue_id" = "$victim_id" }

[[operations]]
include-operation-id = "PurgeQueue"
parameters = { "path.queue_id" = "$purged_id" }

[[operations]]
include-operation-id = "UpdateQueue"
parameters = { "path.queue_id" = "$settings_id" }

$basaltic_checks
TOML

# basaltic, stateful: sequences of calls with the ids the answers give (CreateQueue's new queue,
# ListQueues's queues, ReceiveMessages's receipts), so no queue is fixed here: a fixed one would
# override the linked ids.
cat > "$work/basaltic-stateful.toml" <<TOML
$cache

[auth.openapi.bearer]
bearer = "\${BASALTIC_KEY}"

$basaltic_checks
TOML

# contract NAME DOCUMENT CONFIG [OPTION...]: schemathesis against /openapi/DOCUMENT.json with the
# project config CONFIG: every check, a bounded number of cases per operation, one seed. One
# worker: with two, hypothesis's ast.parse calls race in CPython before 3.11.8/3.12.2 ("AST
# constructor recursion depth mismatch", python/cpython#106905), and python3 here may be older.
# No answer may take longer than the longest documented long poll (20 s) and some.
contract() {
  local name=$1 document=$2 config=$3 start=$SECONDS rc=0
  shift 3
  echo "== contract: $name ($ENDPOINT/openapi/$document.json)"
  # shellcheck disable=SC2086 # CONTRACT_ARGS is a list of options
  "$SCHEMATHESIS" --no-color --config-file "$config" run "$ENDPOINT/openapi/$document.json" \
    --url "$ENDPOINT" \
    --checks all \
    --max-examples "$MAX_EXAMPLES" \
    --seed "$SEED" \
    --generation-database none \
    --workers 1 \
    --request-timeout 30 \
    --max-response-time 25 \
    "$@" ${CONTRACT_ARGS:-} \
    >"$LOGS/$name.log" 2>&1 || rc=$?
  sed -n '/^=* *SUMMARY/,$p' "$LOGS/$name.log"
  if [[ $rc -ne 0 ]]; then
    echo "--- $name: schemathesis failed (exit $rc); its output ($LOGS/$name.log):"
    cut -c1-2000 "$LOGS/$name.log"
  fi
  echo "== contract: $name $([[ $rc -eq 0 ]] && echo passed || echo FAILED) in $((SECONDS - start))s"
  return "$rc"
}

mkdir -p "$LOGS"
passed=0 failed=0
count() { if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi; }
# CONTRACT_ONLY="ezgh basaltic sombus" runs only those; CONTRACT_ARGS adds schemathesis options (say
# `--report har --report-dir /tmp/report`) to the ezgh and basaltic runs.
only=" ${CONTRACT_ONLY:-ezgh basaltic sombus} "
if [[ "$only" == *" ezgh "* ]]; then
  count contract ezgh ezgh "$work/ezgh.toml"
fi
if [[ "$only" == *" basaltic "* ]]; then
  count contract basaltic basaltic "$work/basaltic.toml" --phases examples,coverage,fuzzing
  count contract basaltic-stateful basaltic "$work/basaltic-stateful.toml" --phases stateful
fi
for script in "$HERE"/contract/*.sh; do
  [[ -e "$script" ]] || continue
  [[ "$only" == *" $(basename "$script" .sh) "* ]] || continue
  echo "== contract: $script"
  count bash "$script"
done
echo "contract: $passed passed, $failed failed in $((SECONDS - started))s"
[[ $failed -eq 0 ]]
