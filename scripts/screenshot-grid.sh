#!/usr/bin/env bash
# The README's picture of a scoreboard: the top of a committed row's page (its
# grid) as headless Chromium draws it (make setup-ci installs Chromium).
#
#   scripts/screenshot-grid.sh [ROW] [OUT]    ROW defaults to results/libraries,
#                                             OUT to docs/img/libraries-grid.png
# Run it after `make docs` when the row's figures change.
set -euo pipefail
cd "$(dirname "$0")/.."
ROW="${1:-results/libraries}"
OUT="${2:-docs/img/libraries-grid.png}"
[[ -f "$ROW/index.html" ]] || { echo "screenshot-grid: $ROW/index.html is missing: give a results/ row that has a page (make docs writes them)" >&2; exit 254; }
command -v chromium >/dev/null || { echo "screenshot-grid: chromium is not installed: make setup-ci installs it" >&2; exit 254; }
chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1040 \
  --screenshot="$PWD/$OUT" "file://$PWD/$ROW/index.html" 2>/dev/null
echo "wrote $OUT"
