"""CSV formula injection: no table of any view, served or printed, starts a cell with a formula.

Profiles name things however their writer likes. Here every name a table can show (op names and
types, kernels, HLO modules and ops, memory op/region/shape, plane and line names, tf.data
iterators, tf.functions, host names from file names) is a formula-leading payload (OWASP's
list: `=`, `+`, `-`, `@`, tab, CR). Four runs: a TensorFlow-style run with a GPU, memory and
tf.data (one host per payload, named by its file), a JAX GPU run (jitted functions), a PyTorch
run (operators by input shape), and a real
capture whose file is called `=cmd|' -C calc'!A0.xplane.pb`. Every table of every view the
registry has is fetched from the `data_csv` route for every host it offers and from `tb-profile
view --csv`; no cell may start a formula, each hostile cell comes back with a leading quote.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import urllib.parse
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_profile_plugin import cli
from tb_profile_plugin.logdir import ALL_HOSTS
from tb_profile_plugin.plugin import ProfilePlugin
from tb_profile_plugin.tools import registry
from tb_profile_plugin.tools.csv_table import safe_cell, to_csv
from tb_profile_plugin.xspace import cache
from tests.fixtures import session_dir
from tests.kineto_builder import KinetoTrace
from tests.xspace_builder import Uint, XSpaceBuilder

US = 1_000_000  # ps
#: Formula-leading names (no '/': they also name host files).
PAYLOADS = (
    "=cmd|' -C calc'!A0",
    "+HYPERLINK(\"http:evil.example\";\"x\")",
    "-2+3+cmd|' -C calc'!A0",
    "@SUM(1+9)*cmd|' -C calc'!A0",
    "\t=1+2",
    "\r=1+2",
)
REAL_HOST = "=cmd|' -C calc'!A0"


def _tf_space(host: str) -> bytes:
    """Three steps on `python`; in each, one op per payload (name and type the payload), a
    tf.data pipeline whose iterators are the payloads, allocations whose op, region and shape
    are payloads, and per payload a launch and a GPU kernel of that name; plus a plane and a
    line named by each payload."""
    b = XSpaceBuilder(hostnames=[host])
    cpu = b.plane("/host:CPU")
    py = cpu.line("python", line_id=1)
    launches = cpu.line("tf_Compute", line_id=2)
    stream = b.gpu_plane(0).line("Stream #7(Compute)", line_id=7)
    for k in range(3):
        t0 = k * 2000 * US
        py.event("train", t0, 1500 * US, step_num=k, _r=1)
        py.event("IteratorGetNextOp::DoCompute", t0 + 10 * US, 300 * US, id=99, iter_num=k)
        py.event("Iterator::Root", t0 + 20 * US, 280 * US, id=11)
        for j, name in enumerate(PAYLOADS):
            py.event(f"Iterator::Root::{name}", t0 + (30 + 40 * j) * US, 30 * US, id=20 + j,
                     parent_id=11)
            start = t0 + (400 + 100 * j) * US
            py.event(f"{name}:{name}", start, 60 * US)
            # a tf.function named by the payload (the tf.functions table)
            py.event(f"EagerLocalExecute: __inference_{name}_{j}", start + 70 * US, 20 * US)
            corr = 1000 * k + j + 1
            launches.event("cudaLaunchKernel", start + 5 * US, 5 * US, correlation_id=corr)
            stream.kernel(name, start + 20 * US, 30 * US, correlation_id=corr,
                          tf_op=f"{name}:{name}")
            py.event("MemoryAllocation", start + 1 * US, 0, allocator_name="GPU_0_bfc",
                     bytes_reserved=0, bytes_allocated=1000 * (j + 1),
                     bytes_available=10**6, peak_bytes_in_use=10**5, requested_bytes=1000,
                     allocation_bytes=1000, addr=0x1000 * (j + 1) + k, tf_op=name,
                     region_type=name, data_type=1, shape=name)
    for j, name in enumerate(PAYLOADS):
        cpu.line(name, line_id=100 + j).event(name, 0, 10 * US)
        b.plane(name, plane_id=50 + j).line(name, line_id=1).event(name, 0, 10 * US)
    return b.serialize()


def _jax_space() -> bytes:
    """JAX on a GPU: each payload is a jitted function (XLA module) called three times, its
    kernel named, HLO-op'd and op-pathed by the payload."""
    b = XSpaceBuilder(hostnames=["gpu-host"])
    cpu = b.plane("/host:CPU")
    python = cpu.line("python", line_id=1)
    api = cpu.line("Host Threads/7", line_id=7)
    stream = b.gpu_plane(0).line("Stream #2", line_id=2)
    for k in range(3):
        for j, name in enumerate(PAYLOADS):
            t0 = (1000 * k + 100 * j) * US
            corr = 100 * k + j + 1
            python.event(f"{name}:XLA GPU module", t0, 50 * US)
            api.event("cuLaunchKernel", t0 + 10 * US, 1 * US, correlation_id=Uint(corr))
            stream.kernel(name, t0 + 60 * US, 30 * US, corr, hlo_module=name, hlo_op=name,
                          name=name)
    return b.serialize()


def _torch_trace() -> KinetoTrace:
    """PyTorch (Kineto) with shapes recorded: three steps; in each, one operator per payload,
    named by it (the PyTorch operator tables)."""
    t = KinetoTrace(devices=0)
    for k in range(3):
        t0 = 1000 * k
        t.profiler_step(k, t0, 900)
        for j, name in enumerate(PAYLOADS):
            t.cpu_op(name, t0 + 100 * (j + 1), 50, input_dims=[[j + 1, 8], []])
    return t


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    tf_run = root / "tf" / "plugins" / "profile" / "s1"
    tf_run.mkdir(parents=True)
    for host in PAYLOADS:
        (tf_run / f"{host}.xplane.pb").write_bytes(_tf_space(host))
    jax_run = root / "jax" / "plugins" / "profile" / "s1"
    jax_run.mkdir(parents=True)
    (jax_run / "gpu-host.xplane.pb").write_bytes(_jax_space())
    # PyTorch's layout: the trace right in the run's directory (tensorboard_trace_handler).
    _torch_trace().write(root / "torch" / "s1" / "worker0.1700000000000.pt.trace.json")
    real_run = root / "real" / "plugins" / "profile" / "s1"
    real_run.mkdir(parents=True)
    real = next(session_dir("tfdata_slow").glob("*.xplane.pb"))
    shutil.copyfile(real, real_run / f"{REAL_HOST}.xplane.pb")
    return root


def _get(app: object, **params: str) -> tuple[int, str]:
    response = Client(app).get("/?" + urllib.parse.urlencode(params))  # type: ignore[arg-type]
    return response.status_code, response.get_data(as_text=True)


def is_formula_leading(cell: str) -> bool:
    """OWASP's test, written here again so that the test does not trust the code it checks."""
    return cell[:1] in ("=", "+", "-", "@", "\t", "\r") and not re.fullmatch(
        r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", cell)


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def test_cells_are_neutralised_and_numbers_stay_numbers() -> None:
    for leader in ("=", "+", "-", "@", "\t", "\r"):
        assert safe_cell(f"{leader}1+cmd") == f"'{leader}1+cmd"
    assert [safe_cell(v) for v in (-1.5, np.float64(-2.25), np.int64(-3), 0, True, None)] == [
        -1.5, -2.25, -3, 0, True, None]
    assert [safe_cell(v) for v in ("-3", "+1.5e3", "conv/Conv2D", " =x", "[1, 2]")] == [
        "-3", "+1.5e3", "conv/Conv2D", " =x", "[1, 2]"]
    assert safe_cell(b"=x") == "'=x" and safe_cell(float("-inf")) == "'-inf"
    text = to_csv(["op", "-t"], [["=1+1", -1.5], ["@A", np.float32(-0.5)]])
    assert text == "\"op\",\"'-t\"\n\"'=1+1\",-1.5\n\"'@A\",-0.5\n"
    assert not any(is_formula_leading(c) for row in _cells(text) for c in row)


def test_every_table_of_every_view_is_neutralised(
    logdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, "off")
    apps = ProfilePlugin(base_plugin.TBContext(logdir=str(logdir))).get_plugin_apps()
    rows_by_table: Counter[str] = Counter()
    quoted_by_table: Counter[str] = Counter()
    compared_with_cli = 0
    checked: Counter[str] = Counter()
    for run in ("tf/s1", "jax/s1", "torch/s1", "real/s1"):
        status, text = _get(apps["/run_tools"], run=run)
        assert status == 200
        for view_name in registry.VIEWS:
            view = registry.VIEWS[view_name]
            if not view.tables or f'"{view_name}"' not in text:
                continue
            status, hosts_text = _get(apps["/hosts"], run=run, tag=view_name)
            hosts = json.loads(hosts_text)
            assert status == 200 and hosts, (run, view_name)
            for host in hosts:
                for table in view.tables:
                    status, body = _get(apps["/data_csv"], run=run, tag=view_name, host=host,
                                        table=table)
                    assert status == 200, (run, view_name, host, table, body)
                    cells = _cells(body)
                    live = [c for row in cells for c in row if is_formula_leading(c)]
                    assert not live, (run, view_name, host, table, live[:5])
                    key = f"{view_name}/{table}"
                    checked[key] += 1
                    rows_by_table[key] += len(cells) - 1
                    quoted_by_table[key] += sum(
                        c[:1] == "'" and c[1:2] in "=+-@\t\r" for row in cells for c in row)
                    if host == hosts[0] and run != "real/s1":  # the CLI prints the same text
                        run_dir = (logdir / run if run == "torch/s1" else
                                   logdir / run.split("/")[0] / "plugins" / "profile" / "s1")
                        host_args = [] if host == ALL_HOSTS else ["--host", host]
                        assert cli.main(["view", str(run_dir), view_name, "--csv", "--table",
                                         table, *host_args]) == 0
                        assert capsys.readouterr().out == body
                        compared_with_cli += 1
    every_table = {f"{v.name}/{t}" for v in registry.VIEWS.values() for t in v.tables}
    assert {t for t, n in rows_by_table.items() if n} == every_table
    # Every table showed hostile names, each written with a leading quote, except the step
    # breakdowns (numbers only) and the input ops, whose names are tf.data iterators
    # ("Iterator::...") or TensorFlow enqueue ops (a TF op name starts with a letter, digit or
    # '.'; anything else is not parsed as an op of that type).
    safe_by_rule = {"overview_page/steps", "input_pipeline_analyzer/steps",
                    "input_pipeline_analyzer/input_ops"}
    assert {t for t, n in quoted_by_table.items() if n} == every_table - safe_by_rule
    assert compared_with_cli >= len(every_table)
    print(f"{sum(checked.values())} CSV downloads, {sum(rows_by_table.values())} rows, "
          f"{sum(quoted_by_table.values())} cells neutralised, {compared_with_cli} CLI outputs "
          f"equal; per table: {dict(quoted_by_table)}")
