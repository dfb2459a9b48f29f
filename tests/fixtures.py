"""Where the committed real captures are (see tests/data/README.md), and views built on them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace

DATA_DIR = Path(__file__).resolve().parent / "data"
# The fixture scenarios: tests/data/<name>/, made by scripts/make_fixtures.py.
FIXTURES = ("keras_fit", "custom_loop", "tfdata_slow", "tfdata_parallel", "two_hosts")


def xplane_files() -> list[Path]:
    """Every committed real .xplane.pb, sorted."""
    return sorted(DATA_DIR.glob("**/*.xplane.pb"))


def session_dir(run_prefix: str) -> Path:
    """The one session directory of a fixture run: `keras_fit/train`, `tfdata_slow`, ..."""
    return next((DATA_DIR / run_prefix / "plugins" / "profile").iterdir())


def fixture_run(run_prefix: str) -> str:
    """The run's name in a logdir that is a copy of tests/data: `<run_prefix>/<session>`."""
    return f"{run_prefix}/{session_dir(run_prefix).name}"


def build_view(view: str, path: Path, **params: str) -> dict[str, Any]:
    """`view`'s document on one .xplane.pb (host: the file's name), built in this process."""
    host = path.name.removesuffix(".xplane.pb")
    request = registry.ViewRequest("run", host, {host: decode_xspace(path.read_bytes())}, params)
    return registry.VIEWS[view].build(request)
