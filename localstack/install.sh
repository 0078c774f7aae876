#!/usr/bin/env bash
# Why: installs LocalStack (SQS only) into a Python 3.13 virtualenv, because CI and dev machines have no Docker.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${LOCALSTACK_VENV:-$HOME/.cache/sqs-gateway/localstack-venv}"
REQ="$HERE/requirements.txt"
STAMP="$VENV/.sqs-gateway-requirements.sha256"

find_python() {
  local root cand
  if command -v pyenv >/dev/null 2>&1 && root="$(pyenv root 2>/dev/null)"; then
    for cand in $(ls -d "$root"/versions/3.13.* 2>/dev/null | sort -V -r); do
      [[ -x "$cand/bin/python3.13" ]] && { echo "$cand/bin/python3.13"; return 0; }
    done
  fi
  for cand in "$HOME"/.pyenv/versions/3.13.*/bin/python3.13; do
    [[ -x "$cand" ]] && { echo "$cand"; return 0; }
  done
  if command -v python3.13 >/dev/null 2>&1 && python3.13 -c 'import venv' 2>/dev/null; then
    command -v python3.13; return 0
  fi
  return 1
}

want_hash="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$want_hash" ]]; then
  echo "install.sh: $VENV is up to date (requirements $want_hash), nothing to do"
  exit 0
fi

PY="$(find_python)" || {
  echo "install.sh: ERROR: Python 3.13 not found (looked in \$(pyenv root)/versions/3.13.* and for python3.13 on PATH)." >&2
  echo "install.sh: LocalStack 2026.3.0 needs Python 3.13; install it, e.g. 'pyenv install 3.13'." >&2
  exit 1
}
echo "install.sh: using $PY ($("$PY" --version))"

if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c 'import sys; assert sys.version_info[:2] == (3, 13)' 2>/dev/null; then
  echo "install.sh: creating virtualenv $VENV"
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
fi

echo "install.sh: installing $REQ into $VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$VENV/bin/python" -m pip install --disable-pip-version-check -r "$REQ"
"$VENV/bin/python" -c 'import localstack, boto3; print("install.sh: localstack-core", __import__("importlib.metadata").metadata.version("localstack-core"), "boto3", boto3.__version__)'
echo "$want_hash" > "$STAMP"
echo "install.sh: done"
