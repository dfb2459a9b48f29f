#!/usr/bin/env bash
# The project's whole test suite (the README's test command runs this after installing).
#   1. lint (ruff) and types (mypy), 2. the committed frontend bundle equals a rebuild, 3. pytest: unit,
#   integration (real TensorBoard over HTTP), browser (Playwright + Debian's Chromium).
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== ruff"
python -m ruff check tb_profile_plugin tests scripts/bench.py scripts/make_fixtures.py scripts/capture_nvidia.py

echo "== mypy"
python -m mypy tb_profile_plugin --ignore-missing-imports

echo "== frontend bundle is up to date"
scripts/build_frontend --check

echo "== pytest"
python -m pytest -q -p no:cacheprovider "$@"
