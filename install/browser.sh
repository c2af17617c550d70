#!/usr/bin/env bash
# Installs Debian's Chromium for the JupyterLab browser test (tests/test_jupyterlab.py), which
# drives it through the Python playwright package; playwright's own browser download is never
# used. Needs apt (root, as on CI); without it the test skips and says why.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install/browser.sh: cannot install chromium here (needs root and apt-get); the JupyterLab test will skip" >&2
  exit 0
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
chromium --version
