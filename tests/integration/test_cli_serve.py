"""`tb-profile demo` and `tb-profile serve` start a real TensorBoard with the Profile tab."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.fixtures import DATA_DIR
from tests.integration.conftest import PREFIX, free_port


def _serve_and_list_runs(args: list[str], tmp_path: Path) -> list[str]:
    port = free_port()
    env = dict(os.environ, TB_PROFILE_CACHE_DIR=str(tmp_path / "cache"))
    process = subprocess.Popen(
        [sys.executable, "-m", "tb_profile_plugin.cli", *args, "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True,
    )
    try:
        deadline = time.monotonic() + 90
        printed = ""
        while "Open http" not in printed and time.monotonic() < deadline:
            line = process.stdout.readline() if process.stdout else ""
            if not line and process.poll() is not None:
                pytest.fail(f"tb-profile exited early:\n{printed}")
            printed += line
        assert f"http://127.0.0.1:{port}/" in printed or f":{port}/" in printed
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{PREFIX}/runs", timeout=60) as r:
            return json.loads(r.read())
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_demo_serves_the_bundled_profiles(tmp_path: Path) -> None:
    runs = _serve_and_list_runs(["demo"], tmp_path)
    assert len(runs) == 3
    assert {r.split("/")[0] for r in runs} == {"keras_fit", "tfdata_slow", "two_hosts"}


def test_serve_a_logdir(tmp_path: Path) -> None:
    runs = _serve_and_list_runs(["serve", str(DATA_DIR / "custom_loop")], tmp_path)
    assert len(runs) == 1 and runs[0].count("/") == 0
