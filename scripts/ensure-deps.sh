#!/usr/bin/env bash
# Installs what Petri needs on a Debian/Ubuntu host: bubblewrap (the sandbox engine), and a
# Rust toolchain check. Idempotent; used by serve.sh and test.sh.
set -euo pipefail

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3 python3-venv)
# Gradle builds `build.gradle` projects (Debian's, which runs on the JDK 17 here).
command -v gradle >/dev/null 2>&1 || need_apt+=(gradle)
if ((${#need_apt[@]})); then
  echo "installing ${need_apt[*]} with apt-get" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is missing: install Rust 1.95 (https://rustup.rs) and re-run" >&2
  exit 1
fi

# uv (from PyPI) makes Python dependency installs fast; the server finds it through PETRI_UV.
tools=.venv-tools
if [ ! -x "$tools/bin/uv" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check "uv==0.13.8"
fi
