"""Cold and warm requests of every analysis view through the plugin's data route.

`run(path, code, views, repeats)` (`scripts/bench.py --warm PATH [--code DIR]`) serves a logdir
holding one link to the capture PATH from a fresh child process (`--code`: another checkout of
the package, e.g. an older commit unpacked with `git archive`, to measure before and after in
one run), with an empty disk cache, and asks the `data` route for each view the way the page
does (gzip accepted): once cold, then `repeats` times warm (the same request again from the
same server, after the first finished). Prints per view the status, answer bytes, cold seconds
and the warm median and all warm times in ms, with the load average before and after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VIEWS = ("overview_page", "input_pipeline_analyzer", "tensorflow_stats", "kernel_stats",
         "memory_profile", "pod_viewer", "tf_data_bottleneck_analysis", "profile_info")

_CHILD = r"""
import argparse, json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
logdir, host, views, repeats = sys.argv[2], sys.argv[3], sys.argv[4].split(","), int(sys.argv[5])
from tensorboard.plugins import base_plugin
from werkzeug.test import Client
import tb_profile_plugin
from tb_profile_plugin.plugin import ProfilePlugin

flags = argparse.Namespace(profile_scheduler=None)
apps = ProfilePlugin(base_plugin.TBContext(logdir=logdir, flags=flags)).get_plugin_apps()
data = Client(apps["/data"])

def ask(view):
    query = {"run": "session", "tag": view, "host": host}
    t = time.perf_counter()
    response = data.get("/", query_string=query, headers={"Accept-Encoding": "gzip"})
    body = response.get_data()
    return time.perf_counter() - t, response.status_code, len(body)

rows = []
for view in views:
    cold_s, status, size = ask(view)
    warm_s = [ask(view)[0] for _ in range(repeats)]
    rows.append({"view": view, "status": status, "bytes": size, "cold_s": cold_s,
                 "warm_median_ms": statistics.median(warm_s) * 1e3,
                 "warm_ms": [s * 1e3 for s in warm_s]})
print(json.dumps({"code": tb_profile_plugin.__file__, "views": rows}))
"""


def _load() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def run(path: Path, code: Path | None = None, views: tuple[str, ...] = VIEWS,
        repeats: int = 5) -> dict[str, object]:
    """Cold and warm figures of `views` on the capture `path` (see the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        session = Path(tmp) / "logdir" / "plugins" / "profile" / "session"
        session.mkdir(parents=True)
        host = path.name.removesuffix(".xplane.pb")
        (session / path.name).symlink_to(path.resolve())
        env = dict(os.environ, TB_PROFILE_CACHE_DIR=str(Path(tmp) / "cache"),
                   TB_PROFILE_FOLLOW_LINKS="1")
        load_before = _load()
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(code or ROOT), str(Path(tmp) / "logdir"), host,
             ",".join(views), str(repeats)],
            env=env, check=True, capture_output=True, text=True).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    result.update(file=str(path), repeats=repeats, load_before=load_before,
                  load_after=_load())
    return result
