#!/usr/bin/env bash
# Set up a fresh machine for this project: system tools, then a virtualenv with our packages.
# Idempotent: safe to run before every `make` target.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v cpp >/dev/null || need_apt+=(cpp)
command -v ip >/dev/null || need_apt+=(iproute2)
command -v ethtool >/dev/null || need_apt+=(ethtool)
command -v mn >/dev/null || need_apt+=(mininet)      # emulation/ (make run-fattree); no OVS needed
[ -f /usr/include/xdp/xsk.h ] || need_apt+=(libxdp-dev)     # hostlib's AF_XDP path (hostlib.xdp)
[ -f /usr/include/bpf/bpf.h ] || need_apt+=(libbpf-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    else
        echo "setup: please install: ${need_apt[*]}" >&2
    fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
# Exact versions from requirements.lock (regenerate it with `make lock`), then our package
# itself without dependencies, so nothing outside the lock is ever resolved.
stamp=.venv/.installed-$(cat requirements.lock pyproject.toml | sha1sum | cut -c1-12)
if [ ! -f "$stamp" ]; then
    .venv/bin/pip install -q -r requirements.lock
    PYTHONWARNINGS=ignore .venv/bin/pip install -q --no-deps --no-build-isolation -e .   # quiet: setuptools warns on every editable install
    rm -f .venv/.installed-*
    touch "$stamp"
fi
