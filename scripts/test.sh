#!/usr/bin/env bash
# The project's test suite (the README's test command runs this after installing).
#
#   scripts/test.sh [PYTEST ARGS]           the whole suite, what CI runs:
#       1. lint (ruff) and types (mypy), 2. the committed frontend bundle equals a rebuild,
#       3. pytest: unit, integration (real TensorBoard over HTTP, real profiler servers, a
#          real Dask cluster), browser (Playwright + Debian's Chromium).
#   scripts/test.sh --quick [PYTEST ARGS]   the inner loop (under 3 minutes on 2 cores):
#       lint and types, the unit tests, and one real TensorBoard over HTTP
#       (tests/integration/test_http.py); no bundle rebuild, no browser, no captures.
#
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi

echo "== ruff"
python -m ruff check tb_profile_plugin tests scripts/bench.py scripts/make_fixtures.py \
  scripts/capture_nvidia.py scripts/doc_digest.py scripts/compare_pytorch.py

echo "== mypy"
python -m mypy tb_profile_plugin --ignore-missing-imports

if [ "$quick" = 1 ]; then
  echo "== pytest (quick: unit + a real TensorBoard over HTTP)"
  python -m pytest -q -p no:cacheprovider tests/unit tests/integration/test_http.py "$@"
  exit 0
fi

echo "== frontend bundle is up to date"
scripts/build_frontend --check

echo "== pytest"
python -m pytest -q -p no:cacheprovider "$@"
