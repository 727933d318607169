#!/usr/bin/env bash
# Builds the release binary and prints the benchmark tables (numbers are machine-specific;
# compare the ratios, which are measured against baselines in the same run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deps.sh
export PETRI_UV="${PETRI_UV:-$PWD/.venv-tools/bin/uv}"
cargo build --release --locked -p petri
python3 bench/exec_latency.py target/release/petri "$@"
echo
python3 bench/deps_install.py target/release/petri
echo
python3 bench/test_mode.py target/release/petri
echo
python3 bench/port_preview.py target/release/petri
