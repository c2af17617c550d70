#!/usr/bin/env bash
# Creates (or refreshes) the project's Python environment in .venv from the pinned
# install/requirements.txt. Re-running it is cheap: it reinstalls only when the pins change.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
stamp=.venv/.requirements.sha
translator=python/tensorbook-papermill
want=$(cat install/requirements.txt "$translator/pyproject.toml" "$translator/tensorbook_papermill.py" \
  | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
"$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r install/requirements.txt
# papermill's parameters for the Rust notebooks: an entry point papermill loads when imported.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "./$translator"
rm -rf "$translator/build" "$translator"/*.egg-info
echo "$want" > "$stamp"
