#!/usr/bin/env bash
# Why: runs real, unmodified AWS clients (boto3 over AWS JSON 1.0, boto3 over the old Query/XML protocol,
# aws-cli v1, and a Celery worker on kombu's SQS transport over both protocols) against an SQS-compatible
# endpoint, so wire compatibility is tested the way users will hit it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REQ="$HERE/requirements.txt"
VENV="${CLIENTS_VENV:-$HOME/.cache/sqs-gateway/clients-venv}"
CACHE="${CLIENTS_CACHE:-$HOME/.cache/sqs-gateway/clients}"
LOGS="${CLIENTS_LOGS:-${TMPDIR:-/tmp}/sqs-gateway-clients}"
PYTHON_BIN="${CLIENTS_PYTHON:-python3}"
# An old botocore whose SQS model still used the Query protocol (current ones use AWS JSON 1.0).
QUERY_BOTOCORE="1.29.165"
QUERY_DATA="$CACHE/query-model-$QUERY_BOTOCORE"

export SQS_ENDPOINT="${SQS_ENDPOINT:-http://127.0.0.1:4566}"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1
# Keep the developer's ~/.aws, profiles and endpoint overrides out of the test.
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_PAGER=""
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_SQS AWS_DATA_PATH AWS_USE_FIPS_ENDPOINT 2>/dev/null || true
# SQS_TARGET=localstack tolerates (and prints) LocalStack's known deviations from AWS, aws is strict;
# auto (the default) picks localstack when the endpoint answers /_localstack/health.
SQS_TARGET="${SQS_TARGET:-auto}"
if [[ "$SQS_TARGET" == auto ]]; then
  if curl -fsS --max-time 3 "${SQS_ENDPOINT%/}/_localstack/health" 2>/dev/null | grep -q '"services"'; then
    SQS_TARGET=localstack
  else
    SQS_TARGET=aws
  fi
fi
export SQS_TARGET

# --- the clients' venv, reinstalled only when requirements.txt (or the Python) changes
stamp_of() { { sha256sum "$REQ" | cut -d' ' -f1; "$PYTHON_BIN" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1; }
STAMP="$(stamp_of)"
if [[ ! -x "$VENV/bin/python" || "$(cat "$VENV/.requirements-stamp" 2>/dev/null)" != "$STAMP" ]]; then
  echo "run.sh: installing the clients into $VENV"
  start=$SECONDS
  if [[ -e "$VENV" && ! -f "$VENV/pyvenv.cfg" ]]; then
    echo "run.sh: ERROR: $VENV exists and is not a venv; not touching it" >&2
    exit 1
  fi
  "$PYTHON_BIN" -m venv --clear "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ"
  echo "$STAMP" > "$VENV/.requirements-stamp"
  echo "run.sh: venv ready in $((SECONDS - start))s"
fi

# --- the old SQS model that used the Query protocol, laid out for AWS_DATA_PATH
MODEL="$QUERY_DATA/sqs/2012-11-05/service-2.json"
model_is_query() { "$VENV/bin/python" -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["metadata"]["protocol"] != "query")' "$MODEL" 2>/dev/null; }
if ! model_is_query; then
  mkdir -p "$CACHE/wheels" "$(dirname "$MODEL")"
  "$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps "botocore==$QUERY_BOTOCORE" -d "$CACHE/wheels"
  "$VENV/bin/python" - "$CACHE/wheels/botocore-$QUERY_BOTOCORE-py3-none-any.whl" "$MODEL" <<'EOF'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z, open(out + ".tmp", "wb") as f:
    f.write(z.read("botocore/data/sqs/2012-11-05/service-2.json"))
EOF
  mv "$MODEL.tmp" "$MODEL"
  if ! model_is_query; then
    echo "run.sh: ERROR: $MODEL from botocore $QUERY_BOTOCORE does not say \"protocol\": \"query\"" >&2
    exit 1
  fi
fi

# CLIENTS_INSTALL_ONLY=1: stop once the clients are ready (the Rust tests run some of them too).
if [[ "${CLIENTS_INSTALL_ONLY:-}" == 1 ]]; then
  echo "run.sh: clients ready: $VENV/bin/python, Query model in $QUERY_DATA"
  exit 0
fi

# --- the scenarios
mkdir -p "$LOGS"
echo "run.sh: endpoint $SQS_ENDPOINT (target $SQS_TARGET), logs in $LOGS"
passed=0
failed=0
scenario() { # scenario NAME COMMAND...: one line per scenario; a failed one's FAIL lines and tail too
  local name="$1" log="$LOGS/$1.log" rc=0 start=$SECONDS
  shift
  "$@" >"$log" 2>&1 || rc=$?
  local counts devs
  counts="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n1 || true)"
  devs="$(grep -c '^DEVIATION ' "$log" || true)"
  if [[ $rc -eq 0 ]]; then
    passed=$((passed + 1))
    echo "PASS $name (${counts:-no count}; $devs LocalStack deviation(s) tolerated; $((SECONDS - start))s)"
  else
    failed=$((failed + 1))
    grep -E '^(FAIL|DEVIATION) ' "$log" | head -n 12 | sed 's/^/    /' || true
    [[ -n "$counts" ]] || tail -n 15 "$log" | sed 's/^/    | /'
    echo "FAIL $name (${counts:-exit $rc}; log $log)"
  fi
}

# (a) boto3 with its bundled model: AWS JSON 1.0
scenario boto3-json "$VENV/bin/python" "$HERE/scenario.py" --expect-protocol json
# (b) boto3 with the old Query model found first through AWS_DATA_PATH: Query/XML
scenario boto3-query env AWS_DATA_PATH="$QUERY_DATA" "$VENV/bin/python" "$HERE/scenario.py" --expect-protocol query
# (c) aws-cli v1
scenario aws-cli env AWS_CLI="$VENV/bin/aws" PYTHON="$VENV/bin/python" bash "$HERE/aws_cli.sh"
# (d) Celery (kombu's SQS transport, predefined queue): a solo-pool worker runs 20 tasks, each exactly
# once, stops on SIGTERM, and leaves the queue empty; over JSON 1.0, then over Query/XML
scenario celery env CLIENTS_LOGS="$LOGS" "$VENV/bin/python" "$HERE/celery_tasks.py" --expect-protocol json
scenario celery-query env CLIENTS_LOGS="$LOGS" AWS_DATA_PATH="$QUERY_DATA" "$VENV/bin/python" "$HERE/celery_tasks.py" --expect-protocol query

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
