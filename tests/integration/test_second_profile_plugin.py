"""Another installed plugin named `profile`: TensorBoard still starts, one of them serves."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.integration.conftest import make_logdir, start_tensorboard, stop

FAKE_MODULE = """
from tensorboard.plugins import base_plugin
from werkzeug import Request, Response


class FakePlugin(base_plugin.TBPlugin):
    plugin_name = "profile"

    def get_plugin_apps(self):
        return {"/runs": Request.application(lambda r: Response('["from-the-other-plugin"]'))}

    def is_active(self):
        return True

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js")


class FakeLoader(base_plugin.TBLoader):
    def load(self, context):
        return FakePlugin(context)
"""


def _install_fake_plugin(site: Path) -> None:
    site.mkdir()
    (site / "fake_other_profile.py").write_text(FAKE_MODULE)
    info = site / "fake_other_profile-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fake-other-profile\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[tensorboard_plugins]\nprofile = fake_other_profile:FakeLoader\n"
    )


@pytest.mark.parametrize("choice", [None, "other"])
def test_tensorboard_starts_and_says_who_serves(tmp_path: Path, choice: str | None) -> None:
    site = tmp_path / "site"
    _install_fake_plugin(site)
    pythonpath = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    args = [f"--profile_plugin={choice}"] if choice else []
    server = start_tensorboard(make_logdir(tmp_path), tmp_path, args, {"PYTHONPATH": pythonpath})
    try:
        status, _, body = server.get("/runs")
        assert status == 200
        runs = json.loads(body)
        if choice == "other":
            assert runs == ["from-the-other-plugin"]
            assert "the Profile tab is served by fake_other_profile:FakeLoader" in server.log()
        else:
            assert "from-the-other-plugin" not in runs and len(runs) >= 5
            assert "tb-profile serves the Profile tab" in server.log()
            assert "--profile_plugin=other" in server.log()
    finally:
        stop(server)
