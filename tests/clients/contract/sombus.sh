#!/usr/bin/env bash
# Why: the sombus OpenAPI document (/openapi/sombus.json) is a contract; this holds the running gateway
# to it with schemathesis: the token service (HTTP Basic), the pull routes (a consumer connection's
# token, its own queue with messages in it) and the admin API (an admin key of the workspace), every
# check, each operation with the credentials its security scheme names. Run by tests/clients/contract.sh
# with ENDPOINT, BIN, WORK, SCHEMATHESIS, SOMBUS_ADMIN_KEY and SOMBUS_WORKSPACE in the environment;
# SQS_ACCESS_KEY_ID/SQS_SECRET_ACCESS_KEY (the gateway's SQS endpoint) if set, else the ones of
# $WORK/gateway.toml, to publish messages for the receives to find.
set -euo pipefail
: "${ENDPOINT:?}" "${BIN:?}" "${WORK:?}" "${SCHEMATHESIS:?}" "${SOMBUS_ADMIN_KEY:?}" "${SOMBUS_WORKSPACE:?}"
MAX_EXAMPLES="${CONTRACT_MAX_EXAMPLES:-40}"
SEED="${CONTRACT_SEED:-20250611}"
dir="$WORK/sombus-contract"
mkdir -p "$dir"
export SQSGW_ENDPOINT="$ENDPOINT" SQSGW_ADMIN_KEY="$SOMBUS_ADMIN_KEY" SOMBUS_WORKSPACE
field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

# --- connections: the one the pull routes read, and more for the admin cases to find.
# (--output json: the CLI prints text for people by default.)
connection() { "$BIN" sombus connections create --client-id "$1" --name "contract $1" --output json "${@:2}"; }
pull_created="$(connection contract-pull)"
client_id="$(echo "$pull_created" | field client_id)"
client_secret="$(echo "$pull_created" | field client_secret)"
queue="$("$BIN" sombus connections show "$client_id" --output json | field queue)"
# The connection the admin examples name (the document's example client id), a standard one, and
# one for each admin step to apply to (in the state the step needs: a revoked one to restore, a
# rotated one to stop its old secret, one without a secret to get one).
connection story-consumer >/dev/null
connection contract-standard --standard >/dev/null
for step in revoke restore stop-old revoke-secret get-secret rotate remove; do
  connection "contract-$step" >/dev/null
done
"$BIN" sombus connections revoke contract-restore >/dev/null
"$BIN" sombus connections rotate-secret contract-stop-old >/dev/null
"$BIN" sombus connections revoke-secret contract-get-secret >/dev/null

# --- an access token for the pull routes (the document's own curl line)
token="$(curl -fsS "$ENDPOINT/v1/oauth/token" -u "$client_id:$client_secret" \
  -d grant_type=client_credentials | field access_token)"

# --- messages for the receives: stories of three, published through the gateway's SQS endpoint
access_key="${SQS_ACCESS_KEY_ID:-}" secret_key="${SQS_SECRET_ACCESS_KEY:-}"
if [[ -z "$secret_key" && -f "$WORK/gateway.toml" ]]; then
  read -r access_key secret_key < <(awk -F'"' '
    /^\[\[sqs_api\.credentials\]\]/ { inside = 1; next }
    /^\[/ { inside = 0 }
    inside && /^access_key_id *=/ { id = $2 }
    inside && /^secret *=/ { secret = $2 }
    END { if (id != "" && secret != "") print id, secret }' "$WORK/gateway.toml") || true
fi
if [[ -n "$secret_key" ]]; then
  for story in $(seq 1 20); do
    for n in 1 2 3; do
      AWS_ACCESS_KEY_ID="$access_key" AWS_SECRET_ACCESS_KEY="$secret_key" "$BIN" sombus publish \
        --queue "$queue" --message-type story.context --correlation-id "story-$story" \
        --topic som.story.context --producer-id contract-producer \
        --payload "{\"n\": $n}" >/dev/null
    done
  done
  # And one whose body is not an envelope (the message shows it as `body`, its envelope null).
  curl -fsS --aws-sigv4 "aws:amz:us-east-1:sqs" --user "$access_key:$secret_key" \
    -H "X-Amz-Target: AmazonSQS.SendMessage" -H "Content-Type: application/x-amz-json-1.0" \
    --data "{\"QueueUrl\": \"$ENDPOINT/000000000000/$queue\", \"MessageBody\": \"not an envelope\", \"MessageGroupId\": \"raw\"}" \
    "$ENDPOINT/" >/dev/null
else
  echo "sombus contract: no SQS credentials (SQS_ACCESS_KEY_ID/SQS_SECRET_ACCESS_KEY): receives find no messages"
fi

# --- schemathesis, in runs each with its own fixed parameters and credentials per security scheme:
#   pull     the token service and the pull routes, on the pull connection and its messages, at a
#            pace the connection's tier allows (20 requests a second, bursts of 40);
#   burst    the pull routes again while other receives use up the connection's allowance (429);
#   foreign  the pull and admin routes on a workspace that isn't the caller's (403);
#   steps    each admin route on a connection in the state it applies to (then in the one it left);
#   missing  the admin routes on a connection that doesn't exist (404);
#   admin    the admin API on the workspace, its stateful phase creating and changing connections;
#            last but one, as its cases may revoke, rotate or remove any connection;
#   token    the token service with a wrong secret, past the failures an address may make in a
#            minute (60, then 429).
cat > "$dir/auth.toml" <<TOML
# Nothing kept between runs (no .schemathesis/ in the working tree; each run as its seed makes it).
[cache]
enabled = false

[auth.openapi.client_credentials]
username = "$client_id"
password = "$client_secret"

[auth.openapi.consumer_token]
bearer = "$token"

[auth.openapi.admin_key]
bearer = "\${SOMBUS_ADMIN_KEY}"
TOML
config() { # NAME: the auth, then the run's own settings from stdin
  { cat "$dir/auth.toml"; echo; cat; } > "$dir/$1.toml"
}
config pull <<TOML
[[operations]]
include-tag = "pull"
exclude-operation-id = "receive"
parameters = { "path.tenant" = "$SOMBUS_WORKSPACE", "path.client" = "$client_id" }

[[operations]]
include-operation-id = "receive"
# A long poll of up to 20 s on an emptied queue would make each case that long: receives here do
# not wait (the wait range is held to the parser by the unit tests of src/api/sombus/openapi.rs and
# tests/it/http/sombus/pull.rs).
parameters = { "path.tenant" = "$SOMBUS_WORKSPACE", "path.client" = "$client_id", "query.wait" = 0 }
TOML
cp "$dir/pull.toml" "$dir/burst.toml"
config foreign <<TOML
[[operations]]
include-tag = "pull"
parameters = { "path.tenant" = "elsewhere", "path.client" = "$client_id", "query.wait" = 0 }

[[operations]]
include-tag = "admin"
parameters = { "path.workspace" = "elsewhere" }
TOML
config admin <<TOML
[[operations]]
include-tag = "admin"
parameters = { "path.workspace" = "$SOMBUS_WORKSPACE" }
TOML
{
  cat "$dir/auth.toml"
  for pinned in revokeConnection:revoke restoreConnection:restore stopOldSecret:stop-old \
    revokeClientSecret:revoke-secret getClientSecret:get-secret rotateClientSecret:rotate \
    removeConnection:remove showConnection:story-consumer redriveDeadLetters:story-consumer; do
    client="${pinned#*:}"
    [[ "$client" == story-consumer ]] || client="contract-$client"
    printf '\n[[operations]]\ninclude-operation-id = "%s"\nparameters = { "path.workspace" = "%s", "path.client" = "%s" }\n' \
      "${pinned%%:*}" "$SOMBUS_WORKSPACE" "$client"
  done
} > "$dir/steps.toml"
config missing <<TOML
[[operations]]
include-tag = "admin"
parameters = { "path.workspace" = "$SOMBUS_WORKSPACE", "path.client" = "contract-missing" }
TOML
sed "s/^password = .*/password = \"sbs_not-the-secret\"/" "$dir/auth.toml" > "$dir/token.toml"

# run NAME MAX_EXAMPLES SCHEMATHESIS_ARGS...: one run, every check, one seed, one worker (two
# threads parsing Python source at once can trip CPython 3.11's AST recursion check inside
# hypothesis); its requests and answers kept as a HAR file for the status coverage below.
rc=0
run() {
  local name=$1 examples=$2 start=$SECONDS status=0
  echo "== contract: sombus $name ($ENDPOINT/openapi/sombus.json)"
  "$SCHEMATHESIS" --no-color --config-file "$dir/$name.toml" run "$ENDPOINT/openapi/sombus.json" \
    --url "$ENDPOINT" \
    "${@:3}" \
    --checks all \
    --max-examples "$examples" \
    --seed "$SEED" \
    --generation-database none \
    --workers 1 \
    --request-timeout 30 \
    --report har --report-har-path "$dir/$name.har" \
    >"$dir/$name.log" 2>&1 || status=$?
  sed -n '/^=* *SUMMARY/,$p' "$dir/$name.log"
  if [[ $status -ne 0 ]]; then
    echo "--- sombus $name: schemathesis failed (exit $status); its full output:"
    cat "$dir/$name.log"
    rc=1
  fi
  echo "== contract: sombus $name $([[ $status -eq 0 ]] && echo passed || echo FAILED) in $((SECONDS - start))s"
}

started=$SECONDS
run pull "$MAX_EXAMPLES" --include-tag token --include-tag pull --rate-limit 18/s
# The pull connection still reads after its run: its cases did not break it.
after="$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
  "$ENDPOINT/v1/tenants/$SOMBUS_WORKSPACE/consumers/$client_id/messages?wait=0&max=1")"
if [[ "$after" != 200 && "$after" != 429 ]]; then
  echo "--- sombus: the pull connection answered $after after its run (expected 200)"
  rc=1
fi
# Receives of the same connection, one after another, as fast as they answer: the allowance stays
# used up while the burst run goes, so each of its operations answers 429 (and a few not).
hammer() {
  while :; do
    curl -sS -o /dev/null -H "Authorization: Bearer $token" \
      "$ENDPOINT/v1/tenants/$SOMBUS_WORKSPACE/consumers/$client_id/messages?wait=0&max=1" || true
  done
}
hammer &
hammer_pid=$!
trap 'kill "$hammer_pid" 2>/dev/null || true' EXIT
run burst 5 --include-tag pull --phases coverage,fuzzing
kill "$hammer_pid" 2>/dev/null || true
wait "$hammer_pid" 2>/dev/null || true
run foreign 5 --include-tag pull --include-tag admin --phases examples,coverage,fuzzing
# The steps and the missing connection without the stateful phase: its links would put the created
# connections' ids where these runs hold one.
run steps 5 --include-path-regex '/connections/\{client\}' --phases examples,coverage,fuzzing
run missing 5 --include-path-regex '/connections/\{client\}' --phases examples,coverage,fuzzing
run admin "$MAX_EXAMPLES" --include-tag admin
# All but one of the failures an address may make in a minute (60) first: the run's own cross it.
for _ in $(seq 1 59); do
  curl -sS -o /dev/null -u "$client_id:sbs_not-the-secret" -d grant_type=client_credentials \
    "$ENDPOINT/v1/oauth/token"
done
run token 10 --include-tag token --phases coverage,fuzzing

# --- every documented status answered at least once, but those no request can bring about here
curl -fsS "$ENDPOINT/openapi/sombus.json" > "$dir/sombus.json"
python3 - "$dir/sombus.json" "$dir"/*.har <<'PY' || rc=1
import collections, json, re, sys

# Statuses a contract run can't bring about: a backend or credential store that fails (503), a
# backend without redrive (501), a path that isn't UTF-8 (400 before any other check; schemathesis
# sends UTF-8), a workspace id no admin key of the run may name (400 needs a `*` key), a redrive
# refused as in conflict (409: every connection made here has a dead-letter queue, and a redrive
# still under way when the next starts is a matter of timing).
IMPRACTICAL = {"503", "501"}
IMPRACTICAL_409 = {"redriveDeadLetters"}
IMPRACTICAL_400 = {"listConnections", "showConnection", "removeConnection", "getClientSecret",
                   "redriveDeadLetters", "restoreConnection", "revokeConnection",
                   "revokeClientSecret", "stopOldSecret", "skills"}
document = json.load(open(sys.argv[1]))
operations = []
for path, item in document["paths"].items():
    pattern = re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "$")
    for method, operation in item.items():
        operations.append((pattern, method.upper(), operation["operationId"], set(operation["responses"])))
answered = collections.defaultdict(set)
for har in sys.argv[2:]:
    for entry in json.load(open(har))["log"]["entries"]:
        path = "/" + entry["request"]["url"].split("?")[0].split("/", 3)[3]
        for pattern, method, name, _ in operations:
            if method == entry["request"]["method"] and pattern.match(path):
                answered[name].add(str(entry["response"]["status"]))
missing = []
for _, _, name, documented in operations:
    unseen = documented - answered[name] - IMPRACTICAL
    if name in IMPRACTICAL_400:
        unseen.discard("400")
    if name in IMPRACTICAL_409:
        unseen.discard("409")
    print(f"   {name:20} answered {' '.join(sorted(answered[name]))}")
    if unseen:
        missing.append(f"{name}: {', '.join(sorted(unseen))}")
if missing:
    print("--- sombus: documented statuses no request brought about:\n   " + "\n   ".join(missing))
    sys.exit(1)
PY

if [[ -n "${CONTRACT_KEEP_DIR:-}" ]]; then cp -r "$dir" "$CONTRACT_KEEP_DIR"; fi
echo "== contract: sombus $([[ $rc -eq 0 ]] && echo passed || echo FAILED) in $((SECONDS - started))s"
exit "$rc"
