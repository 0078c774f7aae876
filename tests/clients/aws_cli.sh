#!/usr/bin/env bash
# Why: proves an unmodified aws-cli (v1) works against an SQS-compatible endpoint via --endpoint-url,
# on the core queue/message flow. Run by tests/clients/run.sh; usable alone with `aws` on PATH.
set -euo pipefail

SQS_ENDPOINT="${SQS_ENDPOINT:-http://127.0.0.1:4566}"
AWS_CLI="${AWS_CLI:-aws}"
PY="${PYTHON:-python3}"
REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_DEFAULT_REGION="$REGION" AWS_PAGER=""

RUN="$("$PY" -c 'import uuid; print(uuid.uuid4().hex[:10])')"
QNAME="sgwc-cli-$RUN"
QURL=""
passed=0
failed=0

sqs() { "$AWS_CLI" sqs "$@" --endpoint-url "$SQS_ENDPOINT" --region "$REGION" --output json; }

# json EXPR: evaluates a Python expression over the JSON on stdin, bound to `d`, and prints str(result).
# Empty stdin gives d = {} (aws-cli prints nothing for a receive that got no message); unparsable input
# or an exception in EXPR prints nothing, which no check takes for "True".
json() {
  "$PY" -c '
import json, sys
t = sys.stdin.read()
try:
    d = json.loads(t) if t.strip() else {}
    print(eval(sys.argv[1]))
except Exception:
    pass' "$1"
}

pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
# check NAME COND-OUTPUT REASON: passes when COND-OUTPUT is "True"
check() { if [[ "$2" == "True" ]]; then pass "$1"; else fail "$1" "$3"; fi; }

# with_handle HANDLE COMMAND...: runs COMMAND, stdout dropped; on failure sets ERR to its stderr with
# HANDLE masked (an error message may quote the receipt handle, which must stay out of the output).
ERR=""
with_handle() {
  local handle="$1" err rc=0
  shift
  err="$("$@" 2>&1 >/dev/null)" || rc=$?
  ERR="${err//"$handle"/<receipt-handle>}"
  return $rc
}

cleanup() { if [[ -n "$QURL" ]]; then sqs delete-queue --queue-url "$QURL" >/dev/null 2>&1 || true; fi; }
trap cleanup EXIT

BODY="cli hello $RUN"
# aws-cli v1 sends a blob given on the command line as its raw bytes (v2 would base64-decode it first),
# so the Binary attribute's bytes are the UTF-8 of "AAEC"; output shows them base64-encoded.
ATTRS='{"color":{"DataType":"String","StringValue":"blue"},"count":{"DataType":"Number","StringValue":"42"},"blob":{"DataType":"Binary","BinaryValue":"AAEC"}}'
# MD5OfMessageAttributes as AWS documents it, for ATTRS above (Binary value taken as raw bytes).
WANT_ATTR_MD5="$("$PY" - "$ATTRS" <<'EOF'
import hashlib, json, struct, sys
attrs = json.loads(sys.argv[1])
enc = lambda b: struct.pack(">I", len(b)) + b
buf = b""
for name in sorted(attrs):
    a = attrs[name]
    buf += enc(name.encode()) + enc(a["DataType"].encode())
    if a["DataType"].startswith("Binary"):
        buf += b"\x02" + enc(a["BinaryValue"].encode())
    else:
        buf += b"\x01" + enc(a["StringValue"].encode())
print(hashlib.md5(buf).hexdigest())
EOF
)"
WANT_BODY_MD5="$(printf '%s' "$BODY" | "$PY" -c 'import hashlib,sys; print(hashlib.md5(sys.stdin.buffer.read()).hexdigest())')"

echo "# endpoint $SQS_ENDPOINT  $("$AWS_CLI" --version 2>&1)  queue $QNAME"

# create-queue / get-queue-url
if out="$(sqs create-queue --queue-name "$QNAME")"; then
  QURL="$(json 'd["QueueUrl"]' <<<"$out")"
  check create_queue "$(json "d['QueueUrl'].rstrip('/').endswith('/$QNAME')" <<<"$out")" "QueueUrl $QURL"
else
  fail create_queue "aws sqs create-queue exited non-zero"
  echo "$passed passed, $failed failed"
  exit 1
fi
out="$(sqs get-queue-url --queue-name "$QNAME" || true)"
check get_queue_url "$(json "d.get('QueueUrl') == '$QURL'" <<<"$out")" "get-queue-url returned: $out"

# send-message with String, Number and Binary attributes; check both MD5s
out="$(sqs send-message --queue-url "$QURL" --message-body "$BODY" --message-attributes "$ATTRS" || true)"
MID="$(json 'd.get("MessageId", "")' <<<"$out")"
check send_message "$(json "bool(d.get('MessageId')) and d.get('MD5OfMessageBody') == '$WANT_BODY_MD5' and d.get('MD5OfMessageAttributes') == '$WANT_ATTR_MD5'" <<<"$out")" \
  "response $out (want body md5 $WANT_BODY_MD5, attributes md5 $WANT_ATTR_MD5)"

receive() { # receive [extra args...] -> JSON on stdout
  sqs receive-message --queue-url "$QURL" --max-number-of-messages 10 --message-attribute-names All \
    --message-system-attribute-names All "$@"
}
# Python expression: the single received message is ours, intact, with ApproximateReceiveCount $1.
msg_ok() {
  cat <<EOF
len(d.get('Messages', [])) == 1 and (lambda m: m['MessageId'] == '$MID' and m['Body'] == '''$BODY'''
 and m['MD5OfBody'] == '$WANT_BODY_MD5' and m.get('MD5OfMessageAttributes') == '$WANT_ATTR_MD5'
 and m['Attributes']['ApproximateReceiveCount'] == '$1'
 and m['MessageAttributes']['count'] == {'DataType': 'Number', 'StringValue': '42'}
 and m['MessageAttributes']['color'] == {'DataType': 'String', 'StringValue': 'blue'}
 and __import__('base64').b64decode(m['MessageAttributes']['blob']['BinaryValue']) == b'AAEC')(d['Messages'][0])
EOF
}
# Redacted summary of a receive answer for failure messages (no receipt handle).
summary() { json "[{k: v for k, v in m.items() if k != 'ReceiptHandle'} for m in d.get('Messages', [])]"; }

out="$(receive --wait-time-seconds 5 --visibility-timeout 30 || true)"
check receive_message "$(json "$(msg_ok 1)" <<<"$out")" "got $(summary <<<"$out")"
RH="$(json "d['Messages'][0]['ReceiptHandle'] if d.get('Messages') else ''" <<<"$out")"

out="$(receive --wait-time-seconds 1 || true)"
check in_flight_hidden "$(json "not d.get('Messages')" <<<"$out")" "message delivered again during its visibility timeout"

# change-message-visibility to 0, receive again: ApproximateReceiveCount 2
if [[ -z "$RH" ]]; then
  fail change_message_visibility "no receipt handle (receive failed)"
elif with_handle "$RH" sqs change-message-visibility --queue-url "$QURL" --receipt-handle "$RH" --visibility-timeout 0; then
  pass change_message_visibility
else
  fail change_message_visibility "aws sqs change-message-visibility failed: $ERR"
fi
out="$(receive --wait-time-seconds 5 --visibility-timeout 30 || true)"
check receive_again "$(json "$(msg_ok 2)" <<<"$out")" "got $(summary <<<"$out")"
RH2="$(json "d['Messages'][0]['ReceiptHandle'] if d.get('Messages') else ''" <<<"$out")"

# delete-message, then nothing left
if [[ -z "$RH2" ]]; then
  fail delete_message "no receipt handle (receive failed)"
elif with_handle "$RH2" sqs delete-message --queue-url "$QURL" --receipt-handle "$RH2"; then
  out="$(receive --wait-time-seconds 1 || true)"
  check delete_message "$(json "not d.get('Messages')" <<<"$out")" "message still delivered after delete-message"
else
  fail delete_message "aws sqs delete-message failed: $ERR"
fi

# error: get-queue-url of a missing queue exits non-zero naming the error code
set +e
err="$(sqs get-queue-url --queue-name "sgwc-cli-missing-$RUN" 2>&1 >/dev/null)"
rc=$?
set -e
if [[ $rc -ne 0 ]] && grep -Eq 'AWS\.SimpleQueueService\.NonExistentQueue|QueueDoesNotExist' <<<"$err"; then
  pass error_missing_queue
else
  fail error_missing_queue "exit $rc, stderr: $err"
fi

# delete-queue
if sqs delete-queue --queue-url "$QURL" >/dev/null; then
  QURL=""
  pass delete_queue
else
  fail delete_queue "aws sqs delete-queue exited non-zero"
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
