#!/usr/bin/env bash
# Set up hseval in ./.venv: Debian packages where apt is there, then the Python packages.
#   ./install.sh          the product with every extra (hseval[all]) and Debian's Fashion-MNIST, the embedded default
#   ./install.sh --dev    also the test tools, WordNet and Chromium (for the browser test)
# TORCH="torch==X torchvision==Y" chooses other PyTorch builds (default: the CPU/CUDA wheels pinned below).
set -euo pipefail
cd "$(dirname "$0")"
dev=0
[ "${1:-}" = "--dev" ] && dev=1

packages="dataset-fashion-mnist"
[ $dev = 1 ] && packages="$packages wordnet-base chromium"
if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && sudo="sudo"
  missing=$(for p in $packages; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
  if [ -n "$missing" ]; then
    echo "install.sh: apt-get install $missing"
    if ! { $sudo apt-get install -y -q $missing >/dev/null 2>&1 || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q $missing >/dev/null; }; }; then
      echo "install.sh: could not install $missing with apt; hseval will look elsewhere (see README)" >&2
    fi
  fi
else
  echo "install.sh: no apt-get here; Fashion-MNIST will be downloaded by torchvision on first use" >&2
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q ${TORCH:-torch==2.14.1 torchvision==0.29.1}
if [ $dev = 1 ]; then
  .venv/bin/python -m pip install -q -e '.[dev]'
else
  .venv/bin/python -m pip install -q -e '.[all]'
fi
echo "install.sh: ready (.venv/bin/hseval)"
