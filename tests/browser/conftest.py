"""Browser-test fixtures: a real TensorBoard on the fixture profiles, driven by Debian's Chromium.

The session starts `tensorboard --logdir <copy of tests/data fixtures> --host 127.0.0.1` on a
free port, waits until the Profile plugin's `runs` route answers 200 (up to 60 s), and stops
it at the end. Playwright drives `/usr/bin/chromium` (never `playwright install`: no browser
is downloaded). Every page records console errors, uncaught exceptions and the URL of every
request, so tests can assert a clean console and no traffic beyond 127.0.0.1.

Set TB_PROFILE_TEST_SERVER=http://127.0.0.1:PORT to run the tests against a TensorBoard you
started yourself (it must serve the same fixture runs); no process is started then.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.support import (
    CHROMIUM,
    CHROMIUM_ARGS,
    LOCAL_HOST,
    STARTUP_TIMEOUT_S,
    PageRecord,
)
from tests.browser.synthetic import write_logdir as write_synthetic_logdir
from tests.fixtures import DATA_DIR, FIXTURES


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOCAL_HOST, 0))
        return int(sock.getsockname()[1])


def _status(url: str) -> int | None:
    """The HTTP status of a GET, or None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (urllib.error.URLError, OSError):
        return None


def _unavailable(reason: str) -> None:
    """Skip on a developer's machine that lacks a part; in CI (CI=true) that is a failure."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def _missing_fixtures() -> list[str]:
    return [name for name in FIXTURES if not any((DATA_DIR / name).glob("**/*.xplane.pb"))]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright's launch arguments, pointed at Debian's Chromium."""
    if not os.access(CHROMIUM, os.X_OK):
        _unavailable(f"{CHROMIUM} not found: apt-get install -y chromium")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    """One window size for every test (and for docs/screenshots/, scripts/screenshots.py)."""
    return {**browser_context_args, "viewport": {"width": 1280, "height": 800}}


@pytest.fixture(scope="session")
def fixture_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One logdir holding a copy of every fixture scenario, as <logdir>/<scenario>/."""
    missing = _missing_fixtures()
    if len(missing) == len(FIXTURES):
        _unavailable(f"no fixture profiles in {DATA_DIR} (scripts/make_fixtures.py makes them)")
    if missing:
        pytest.fail(f"fixture profiles missing from {DATA_DIR}: {', '.join(missing)}")
    logdir = tmp_path_factory.mktemp("logdir")
    for name in FIXTURES:
        # A copy, not a symlink: run discovery need not follow links.
        shutil.copytree(DATA_DIR / name, logdir / name)
    return logdir


def _require_plugin() -> None:
    try:
        importlib.import_module("tb_profile_plugin.plugin")
    except ImportError as error:
        _unavailable(f"the plugin is not importable ({error}); pip install -e .")


@contextlib.contextmanager
def running_tensorboard(logdir: Path, work: Path) -> Iterator[str]:
    """Runs `tensorboard --logdir LOGDIR` on a free port; yields its base URL once ready."""
    port = _free_port()
    base = f"http://{LOCAL_HOST}:{port}"
    log_path = work / "tensorboard.log"
    # Its own cache directory, so a test never reads (or leaves) the user's cache.
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache"), "PYTHONUNBUFFERED": "1"}
    command = [
        sys.executable, "-m", "tensorboard.main",
        "--logdir", str(logdir),
        "--host", LOCAL_HOST,
        "--port", str(port),
        "--load_fast", "false",
    ]  # fmt: skip
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        _wait_until_ready(process, f"{base}/data/plugin/profile/runs", log_path)
        yield base
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def tensorboard_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Base URL (no trailing slash) of a real TensorBoard serving the fixture logdir."""
    external = os.environ.get("TB_PROFILE_TEST_SERVER")
    if external:
        yield external.rstrip("/")
        return
    _require_plugin()
    logdir: Path = request.getfixturevalue("fixture_logdir")
    with running_tensorboard(logdir, tmp_path_factory.mktemp("tensorboard")) as base:
        yield base


@contextlib.contextmanager
def own_tensorboard(
    tmp_path_factory: pytest.TempPathFactory, name: str, fill: Callable[[Path], None]
) -> Iterator[str]:
    """A TensorBoard of this module on a new logdir `name` that `fill` writes; its base URL."""
    if os.environ.get("TB_PROFILE_TEST_SERVER"):
        pytest.skip("TB_PROFILE_TEST_SERVER is set: no TensorBoard is started")
    _require_plugin()
    logdir = tmp_path_factory.mktemp(f"{name}_logdir")
    fill(logdir)
    with running_tensorboard(logdir, tmp_path_factory.mktemp(f"tensorboard_{name}")) as base:
        yield base


def captures_tensorboard(
    tmp_path_factory: pytest.TempPathFactory, name: str, captures: tuple[str, ...]
) -> contextlib.AbstractContextManager[str]:
    """A TensorBoard of this module on copies of the committed real `captures` (tests/data)."""

    def fill(logdir: Path) -> None:
        for capture in captures:
            shutil.copytree(DATA_DIR / capture, logdir / capture)

    return own_tensorboard(tmp_path_factory, name, fill)


@pytest.fixture(scope="module")
def empty_tensorboard_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a real TensorBoard whose logdir holds no profile at all."""
    with own_tensorboard(tmp_path_factory, "empty", lambda logdir: None) as base:
        yield base


@pytest.fixture(scope="module")
def synthetic_tensorboard_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a real TensorBoard on the synthetic profiles (tests/browser/synthetic.py)."""
    with own_tensorboard(tmp_path_factory, "synthetic", write_synthetic_logdir) as base:
        yield base


def _wait_until_ready(process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    last: int | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"tensorboard exited with code {process.returncode} before serving {url}:\n"
                + _tail(log_path)
            )
        last = _status(url)
        if last == 200:
            return
        time.sleep(0.5)
    pytest.fail(
        f"{url} did not answer 200 within {STARTUP_TIMEOUT_S:.0f} s (last status: {last}):\n"
        + _tail(log_path)
    )


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stops the TensorBoard this session started (its own process group only)."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@pytest.fixture
def record(page: Any) -> PageRecord:
    """Starts recording `page` (the pytest-playwright page of this test)."""
    rec = PageRecord()

    def on_console(message: Any) -> None:
        if message.type == "error":
            rec.console_errors.append(f"{message.text} @ {message.location.get('url', '')}")

    page.on("console", on_console)
    page.on("pageerror", lambda error: rec.page_errors.append(str(error)))
    page.on("request", lambda request: rec.requests.append(request.url))
    return rec
