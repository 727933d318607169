#!/usr/bin/env bash
# Builds and starts Petri on its embedded defaults: 127.0.0.1:8000, state in ~/.petri.
# Every PETRI_* variable (see README) and every `petri serve` flag passes through.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deps.sh
export PETRI_UV="${PETRI_UV:-$PWD/.venv-tools/bin/uv}"
cargo build --release --locked -p petri
exec target/release/petri serve "$@"
