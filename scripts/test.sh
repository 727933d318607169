#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit and integration tests (which start real
# servers and real sandboxes; cgroup limits need root), then the published jhansi SDK and MCP
# tools against a live server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deps.sh
export PETRI_UV="${PETRI_UV:-$PWD/.venv-tools/bin/uv}"

cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo test --locked --workspace -- --test-threads=2

# Compatibility with the published Python SDK (jhansi 0.1.7 needs Python >= 3.12).
python=""
for candidate in python3.13 python3.12 "$HOME"/.pyenv/versions/3.1[23]*/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    python=$(command -v "$candidate"); break
  fi
done
if [ -z "$python" ]; then
  echo "FAIL: no Python >= 3.12 found for the jhansi SDK compatibility tests" >&2
  exit 1
fi
venv=.venv-sdk
[ -x "$venv/bin/pytest" ] || { "$python" -m venv "$venv" && "$venv/bin/pip" install -q "jhansi==0.1.7" "pytest>=8"; }
PETRI_BIN=target/debug/petri "$venv/bin/pytest" -q -p no:cacheprovider -p no:warnings --confcutdir . tests/sdk

# Our own SDK and MCP server (sdk/python), installed the way users install it.
ours=.venv-sdk-python
[ -x "$ours/bin/pytest" ] || { python3 -m venv "$ours" && "$ours/bin/pip" install -q "./sdk/python[test]"; }
"$ours/bin/pip" install -q --no-deps --force-reinstall ./sdk/python
PETRI_BIN=target/debug/petri "$ours/bin/pytest" -q -p no:cacheprovider --confcutdir . sdk/python/tests
echo "all tests passed"
