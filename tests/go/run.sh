#!/usr/bin/env bash
# The Go client's tests (sdk/go, module github.com/basaltic-sh/sdk-go) and the basaltic
# document's Go program (examples/go), against a gateway of their own:
#   - gofmt, `go vet ./...`, `go test ./...` in sdk/go: the unit tests (httptest: retries and
#     backoff, the long-poll timeout rule, JSON shapes) and the live tests (every operation and
#     every error code this gateway can answer), with the gateway's endpoint and keys in
#     BASALTIC_TEST_ENDPOINT, BASALTIC_TEST_API_KEY (*=*) and BASALTIC_TEST_LIMITED_API_KEY
#     (*=send,receive); and that without them the live tests skip (`go test` alone works offline);
#   - the document's program built (its go.mod's replace directive points at sdk/go) and run in
#     a directory holding the document's request-1.json and request-2.json, with QUEUE_ID,
#     BASALTIC_ENDPOINT and BASALTIC_API_KEY: it prints the sent message's id, then the message.
# Without `go`: as root with CI or SQSGW_TEST_REQUIRE_SERVICES set, installs Debian's golang-go;
# otherwise prints `SKIPPED go client tests: …` and exits 0. The gateway binary is
# ${SQSGW_BIN:-target/debug/sqs-gateway}. Go's caches live under ~/.cache (or $TMPDIR): nothing
# is written into the repository. Prints `go: N passed, M failed`; exits non-zero on a failure.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
started=$SECONDS
BIN="${SQSGW_BIN:-target/debug/sqs-gateway}"

if ! command -v go >/dev/null 2>&1; then
  if [[ "$(id -u)" == 0 && ( -n "${CI:-}" || -n "${SQSGW_TEST_REQUIRE_SERVICES:-}" ) ]]; then
    echo "go: installing Debian's golang-go"
    if ! { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null; }; then
      echo "go: apt-get could not install golang-go"
      echo "go: 0 passed, 1 failed"
      exit 1
    fi
    if ! command -v go >/dev/null 2>&1; then
      echo "go: golang-go is installed but no go is on PATH ($PATH)"
      echo "go: 0 passed, 1 failed"
      exit 1
    fi
  else
    echo "SKIPPED go client tests: no go toolchain on PATH (apt-get install golang-go; as root with CI or SQSGW_TEST_REQUIRE_SERVICES set this script installs it)"
    exit 0
  fi
fi

# Go 1.19 or later; no module proxy (the module uses the standard library only), no toolchain
# download, no GOFLAGS or go.work of the caller's, caches outside the repository.
export GOPROXY=off GOFLAGS= GOTOOLCHAIN=local GOWORK=off GO111MODULE=on GOENV=off GONOSUMDB= GOSUMDB=off
cache_root="${TMPDIR:-/tmp}/sqs-gateway-go-$(id -u)"
if [[ -n "${HOME:-}" ]] && mkdir -p "$HOME/.cache" 2>/dev/null && [[ -w "$HOME/.cache" ]]; then
  cache_root="$HOME/.cache/sqs-gateway-go"
fi
export GOCACHE="${GOCACHE:-$cache_root/build}" GOPATH="$cache_root/gopath" GOMODCACHE="$cache_root/gopath/pkg/mod"
mkdir -p "$GOCACHE" "$GOPATH"
go_version="$(go env GOVERSION 2>/dev/null)"
minor="$(sed -n 's/^go1\.\([0-9]*\).*/\1/p' <<<"$go_version")"
if [[ -z "$minor" || "$minor" -lt 19 ]]; then
  echo "go: $go_version found; the Go client needs Go 1.19 or later"
  echo "go: 0 passed, 1 failed"
  exit 1
fi
echo "go: $go_version ($(command -v go)); caches in $cache_root"

if [[ ! -x "$BIN" ]]; then
  echo "go: no gateway binary at $BIN (cargo build, or set SQSGW_BIN)"
  echo "go: 0 passed, 1 failed"
  exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/sqsgw-go.XXXXXX")"
pids=()
# Stops every gateway this script started, and checks that none is left (each one's command line
# names its config in $work); one left over is stopped by its process id and fails the run.
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  local left
  left="$(pgrep -f -- "--config $work/" || true)"
  if [[ -n "$left" ]]; then
    echo "go: gateways still running after the run:" >&2
    pgrep -af -- "--config $work/" >&2 || true
    for pid in $left; do kill "$pid" 2>/dev/null || true; done
    status=1
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

passed=0 failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
finish() {
  echo "go: done in $((SECONDS - started)) s"
  echo "go: $passed passed, $failed failed"
  [[ $failed -eq 0 ]]
  exit
}

free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    return
  fi
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
}

# A basaltic key: `new-basaltic-key` prints the key (in a `#   sqsgw_…` comment, or an
# `export BASALTIC_API_KEY=…` line) and its `[[basaltic.keys]]` entry.
new_key() {
  local output
  output="$("$BIN" new-basaltic-key "$@")" || return 1
  key="$(sed -n 's/^export BASALTIC_API_KEY=["'\'']\{0,1\}\(sqsgw_[^"'\'']*\).*$/\1/p' <<<"$output" | head -n 1)"
  [[ -n "$key" ]] || key="$(sed -n 's/^#[[:space:]]*\(sqsgw_[^[:space:]]*\)[[:space:]]*$/\1/p' <<<"$output" | head -n 1)"
  entry="$(grep -v -e '^#' -e '^export ' <<<"$output")"
  [[ -n "$key" && "$entry" == *"[[basaltic.keys]]"* ]]
}

new_key --grant '*=*' --name admin || { echo "go: new-basaltic-key printed no key and entry"; fail "gateway keys"; finish; }
admin_key="$key" admin_entry="$entry"
new_key --grant '*=send,receive' --name limited || { fail "gateway keys"; finish; }
limited_key="$key" limited_entry="$entry"
receipt_secret="$("$BIN" new-receipt-key)" || { fail "new-receipt-key"; finish; }

# The gateway: embedded engine in memory, every queue a basaltic queue, queues made by name,
# metrics sampled every second. A port taken meanwhile is tried again with another.
endpoint=""
for try in 1 2 3; do
  port="$(free_port)"
  config="$work/gateway-$try.toml"
  cat > "$config" <<TOML
[server]
listen = "127.0.0.1:$port"

[backend]
kind = "embedded"
in_memory = true

[[receipt_keys]]
id = 1
secret = "$receipt_secret"

[sqs_api]
manage_queues = true

[basaltic]
all_queues = true
metrics_interval_seconds = 1

$admin_entry

$limited_entry
TOML
  if ! check="$("$BIN" check-config --config "$config" 2>&1)"; then
    echo "$check"
    fail "check-config"
    finish
  fi
  "$BIN" serve --config "$config" >"$work/gateway-$try.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 1 100); do
    if "$BIN" probe --url "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
      endpoint="http://127.0.0.1:$port"
      break 2
    fi
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  # Not answering: stopped before the next try.
  kill "${pids[-1]}" 2>/dev/null || true
  wait "${pids[-1]}" 2>/dev/null || true
done
if [[ -z "$endpoint" ]]; then
  echo "go: the gateway did not start; its log:"
  cat "$work"/gateway-*.log
  fail "gateway start"
  finish
fi
pass "gateway started at $endpoint (config checked)"

# gofmt and go vet.
if unformatted="$(gofmt -l sdk/go examples/go 2>&1)" && [[ -z "$unformatted" ]]; then
  pass "gofmt"
else
  echo "$unformatted"
  fail "gofmt"
fi
if out="$(cd sdk/go && go vet ./... 2>&1)"; then
  pass "go vet ./..."
else
  echo "$out"
  fail "go vet ./..."
fi

# Offline, the live tests skip with their reason.
out="$(cd sdk/go && env -u BASALTIC_TEST_ENDPOINT go test -count=1 -v -run Live ./queue 2>&1)"
skips="$(grep -c '^--- SKIP: TestLive' <<<"$out")"
if [[ "$skips" -gt 0 ]] && ! grep -q -e '^--- FAIL' -e '^--- PASS' <<<"$out" && grep -q 'BASALTIC_TEST_ENDPOINT is unset' <<<"$out"; then
  pass "go test offline: the $skips live tests skip"
else
  echo "$out"
  fail "go test offline: the live tests skip"
fi

# The unit and live tests, one check each.
out="$(cd sdk/go && BASALTIC_TEST_ENDPOINT="$endpoint" BASALTIC_TEST_API_KEY="$admin_key" \
  BASALTIC_TEST_LIMITED_API_KEY="$limited_key" go test -count=1 -timeout 100s -v ./... 2>&1)"
test_status=$?
while read -r _ verdict name _; do
  case "$verdict" in
    PASS:) pass "go test $name" ;;
    FAIL:) fail "go test $name" ;;
    SKIP:) fail "go test $name skipped though the gateway runs" ;;
  esac
done < <(grep -E '^--- (PASS|FAIL|SKIP): ' <<<"$out")
if [[ $test_status -ne 0 ]] || grep -q '^--- FAIL' <<<"$out"; then
  # Failures in full (a build failure has no `--- FAIL` line: counted here).
  grep -q '^--- FAIL' <<<"$out" || fail "go test ./... (exit $test_status)"
  grep -v -e '^=== ' -e '^--- PASS' -e '^PASS$' <<<"$out"
fi
grep -h -e 'DOC MISMATCH' -e 'not reachable against' <<<"$out" | sed 's/^[[:space:]]*/    /' || true

# The document's program, built with its go.mod (the replace directive) and run as a user would.
if out="$(cd examples/go && go build -o "$work/basaltic-example" . 2>&1)"; then
  pass "examples/go builds (replace github.com/basaltic-sh/sdk-go => ../../sdk/go)"
  mkdir -p "$work/program"
  cp examples/basaltic/request-1.json examples/basaltic/request-2.json "$work/program/"
  created="$(curl -sS -X POST "$endpoint/v1/queues" \
    -H "Authorization: Bearer $admin_key" -H 'Content-Type: application/json' \
    -d "{\"name\": \"go-example-$RANDOM$RANDOM\"}" 2>&1)"
  queue_id="$(sed -n 's/.*"result":{"id":"\([0-9a-f-]\{36\}\)".*/\1/p' <<<"$created")"
  if [[ -z "$queue_id" ]]; then
    echo "$created"
    fail "the document's program: a queue to run it on"
  elif out="$(cd "$work/program" && env -u BASALTIC_CONFIG_FILE -u BASALTIC_API_KEY_FILE HOME="$work/program" \
    QUEUE_ID="$queue_id" BASALTIC_ENDPOINT="$endpoint" BASALTIC_API_KEY="$admin_key" \
    timeout 60 "$work/basaltic-example" 2>&1)"; then
    first="$(sed -n 1p <<<"$out")" second="$(sed -n 2p <<<"$out")"
    message_id="$(sed -n 's/^&{MessageID:\([0-9a-f-]\{36\}\)}$/\1/p' <<<"$first")"
    if [[ -n "$message_id" && "$(wc -l <<<"$out")" -eq 2 && "$second" == "&{Messages:[{MessageID:$message_id "* &&
      "$second" == *'Body:{"order_id":"A-1001"} Attributes:map[event:{Type:String Value:order.paid}] ReceiptHandle:[receipt handle] ReceiveCount:1 '* ]]; then
      pass "the document's program sends request-1.json and receives it with request-2.json"
      sed 's/^/    /' <<<"$out"
    else
      echo "$out"
      fail "the document's program's output"
    fi
  else
    echo "$out"
    fail "the document's program exits 0"
  fi
else
  echo "$out"
  fail "examples/go builds"
fi

finish
