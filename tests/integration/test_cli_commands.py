"""The installed `tb-profile` script's summary, view and diff, against a real TensorBoard.

Every test runs the console script found on PATH (`pip install -e .`) in a subprocess, on the
real captures, and compares what it prints with what the plugin's routes serve over HTTP.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import urllib.parse
from pathlib import Path

import pytest

from tests.fixtures import DATA_DIR, FIXTURES
from tests.integration.conftest import Server

REPO = Path(__file__).resolve().parents[2]
CATEGORIES = ["device_compute", "device_to_device", "device_collectives", "host_compute",
              "kernel_launch", "input", "output", "compilation", "all_others"]


def _script() -> str:
    path = shutil.which("tb-profile")
    assert path, "tb-profile is not on PATH: pip install -e ."
    return path


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    # PYTHONPATH only makes the repository importable when the editable install points at
    # another checkout; the script itself is the installed one.
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    return dict(env, TB_PROFILE_CACHE_DIR=str(tmp / "cli-cache"), PYTHONPATH=str(REPO),
                TERM="xterm", **extra)


def tb_profile(tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_script(), *args], capture_output=True, text=True, timeout=300,
                          env=_env(tmp, **env))


def _route(server: Server, route: str, **params: str) -> tuple[int, bytes]:
    status, _, body = server.get(f"/{route}?{urllib.parse.urlencode(params)}")
    return status, body


def _run_of(server: Server, fixture: str) -> str:
    return next(r for r in server.get_json("runs") if r.startswith(fixture + "/"))


def _same_doc(cli_doc: dict, route_doc: dict) -> None:
    """Equal documents; the run is named from the logdir given (the route's is longer)."""
    assert route_doc["run"] == cli_doc["run"] or route_doc["run"].endswith("/" + cli_doc["run"])
    assert {**cli_doc, "run": None} == {**route_doc, "run": None}


@pytest.mark.parametrize("fixture", FIXTURES)
def test_summary_json_is_the_data_routes_overview(
    server: Server, tmp_path: Path, fixture: str
) -> None:
    run = _run_of(server, fixture)
    hosts = server.get_json("hosts", run=run, tag="overview_page")
    assert hosts
    path = str(server.logdir / fixture)
    for host in hosts:
        result = tb_profile(tmp_path, "summary", path, "--host", host, "--json")
        assert result.returncode == 0, result.stderr
        status, body = _route(server, "data", run=run, tag="overview_page", host=host)
        assert status == 200, body
        cli_doc, route_doc = json.loads(result.stdout), json.loads(body)
        assert cli_doc["tool"] == "overview_page" and cli_doc["host"] == host
        _same_doc(cli_doc, route_doc)
        if host != "ALL_HOSTS":  # byte for byte, apart from the run name
            assert result.stdout.rstrip("\n").replace(
                json.dumps(cli_doc["run"]), json.dumps(route_doc["run"]), 1
            ).encode() == body
    if len(hosts) == 1:  # without --host the one host is summarised
        plain = tb_profile(tmp_path, "summary", path, "--json")
        assert plain.returncode == 0, plain.stderr
        assert json.loads(plain.stdout)["host"] == hosts[0]


def test_summary_text_fits_80_columns_and_says_what_matters(tmp_path: Path) -> None:
    result = tb_profile(tmp_path, "summary", str(DATA_DIR / "tfdata_slow"))
    assert result.returncode == 0, result.stderr
    doc = json.loads(tb_profile(tmp_path, "summary", str(DATA_DIR / "tfdata_slow"),
                                "--json").stdout)
    text = result.stdout
    assert "\x1b[" not in text  # not a terminal: no colour
    assert max(len(line) for line in text.splitlines()) <= 80
    assert f"Run {doc['run']}" in text
    assert f"Steps: {len(doc['steps'])}" in text
    assert f"{doc['step_time_ms']['avg']:.3f} ms" in text
    for row in doc["categories"].values():  # every category with ms and %
        assert f"{row['label']:<20} {row['avg']:>10.3f} {row['percent']:>6.1f}%" in text
    assert f"{doc['bottleneck']['input_bound'].upper()} input-bound" in text
    assert doc["top_host_ops"][0]["name"] in text
    assert doc["recommendations"][0].split()[0] in text
    for message in doc["diagnostics"]["info"]:
        assert " ".join(message.split()[:4]) in " ".join(text.split())
    (function,) = doc["tf_functions"]  # the capture's train_step, called once per step
    assert "tf.functions (host call time)" in text
    assert (f"  {function['calls']:>6} {function['mean_ms']:>9.3f} {function['min_ms']:>9.3f} "
            f"{function['max_ms']:>9.3f} {100 * function['fraction']:>6.1f}%  "
            f"{function['function']}") in text


def test_diff_slow_vs_parallel_names_input_time(server: Server, tmp_path: Path) -> None:
    slow, parallel = str(DATA_DIR / "tfdata_slow"), str(DATA_DIR / "tfdata_parallel")
    result = tb_profile(tmp_path, "diff", slow, parallel, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    before, after = (server.get_json("data", run=_run_of(server, fixture), tag="overview_page")
                     for fixture in ("tfdata_slow", "tfdata_parallel"))
    assert doc["step_time_ms"]["a"] == before["step_time_ms"]["avg"]
    assert doc["step_time_ms"]["b"] == after["step_time_ms"]["avg"]
    assert doc["step_time_ms"]["delta"] < 0
    changes = {c["category"]: c["delta_ms"] for c in doc["categories"]}
    for key in CATEGORIES:
        expected = after["categories"][key]["avg"] - before["categories"][key]["avg"]
        assert changes[key] == pytest.approx(expected, abs=1e-9)
    assert max(changes, key=lambda k: abs(changes[k])) == "input"
    assert doc["most_changed_category"] == "input"
    assert doc["a"]["bottleneck"] == before["bottleneck"]
    assert doc["b"]["bottleneck"] == after["bottleneck"]
    percent = round(100 * doc["step_time_ms"]["delta"] / doc["step_time_ms"]["a"])
    assert doc["conclusion"] == (
        f"step time \u2212{abs(percent)} %: input wait fell from "
        f"{before['categories']['input']['avg']:.1f} ms to "
        f"{after['categories']['input']['avg']:.1f} ms per step")
    kinds = {op["change"] for op in doc["ops"]}
    assert {"new", "vanished", "changed"} <= kinds  # the map op became a parallel map
    deltas = [abs(op["delta_ms"]) for op in doc["ops"]]
    assert deltas == sorted(deltas, reverse=True)
    text = tb_profile(tmp_path, "diff", slow, parallel)
    assert text.returncode == 0, text.stderr
    assert doc["conclusion"] in text.stdout
    assert max(len(line) for line in text.stdout.splitlines()) <= 80
    assert "A: HIGHLY input-bound" in text.stdout
    (train,) = doc["tf_functions"]
    assert (train["function"], train["a_calls"], train["b_calls"]) == (
        before["tf_functions"][0]["function"], before["tf_functions"][0]["calls"],
        after["tf_functions"][0]["calls"])
    assert train["delta_ms"] == pytest.approx(
        after["tf_functions"][0]["mean_ms"] - before["tf_functions"][0]["mean_ms"])
    assert "tf.functions (mean call time)" in text.stdout


def test_compare_route_serves_the_diff(server: Server, tmp_path: Path) -> None:
    run_a, run_b = _run_of(server, "tfdata_slow"), _run_of(server, "tfdata_parallel")
    route_doc = server.get_json("compare", run_a=run_a, run_b=run_b)
    cli = tb_profile(tmp_path, "diff", str(server.logdir / "tfdata_slow"),
                     str(server.logdir / "tfdata_parallel"), "--json")
    cli_doc = json.loads(cli.stdout)
    assert route_doc["a"]["run"] == run_a and route_doc["b"]["run"] == run_b
    for side in ("a", "b"):
        route_doc[side]["run"] = cli_doc[side]["run"]
    assert route_doc == cli_doc
    two = _run_of(server, "two_hosts")
    same = server.get_json("compare", run_a=two, run_b=two)
    assert same["a"]["host"] == "ALL_HOSTS" and same["step_time_ms"]["delta"] == 0
    assert _route(server, "compare", run_a="nope", run_b=run_b)[0] == 404
    assert _route(server, "compare", run_a=run_a, run_b=run_b, host_b="../x")[0] == 400
    assert _route(server, "compare", run_a=run_a, run_b=run_b, host_b="nohost")[0] == 404
    # no host of the same name: B over all its hosts, and said so
    mixed = server.get_json("compare", run_a=run_a, run_b=two)
    assert mixed["a"]["host"] == "vm" and mixed["b"]["host"] == "ALL_HOSTS"
    assert any("no host of the same name" in m for m in mixed["diagnostics"]["info"])


def test_view_json_and_csv_equal_the_routes(server: Server, tmp_path: Path) -> None:
    run = _run_of(server, "tfdata_slow")
    path = str(server.logdir / "tfdata_slow")
    as_json = tb_profile(tmp_path, "view", path, "tensorflow_stats", "--json",
                         "--param", "include_idle=false")
    assert as_json.returncode == 0, as_json.stderr
    _same_doc(json.loads(as_json.stdout), server.get_json(
        "data", run=run, tag="tensorflow_stats", host="vm", include_idle="false"))
    as_csv = tb_profile(tmp_path, "view", path, "overview_page", "--csv")
    assert as_csv.returncode == 0, as_csv.stderr
    status, body = _route(server, "data_csv", run=run, tag="overview_page", host="vm",
                          table="steps")
    assert status == 200 and as_csv.stdout == body.decode()


def test_exit_codes_and_messages(server: Server, tmp_path: Path) -> None:
    missing = tb_profile(tmp_path, "summary", str(tmp_path / "nowhere"))
    assert missing.returncode == 3
    assert "nowhere does not exist" in missing.stderr and "logdir" in missing.stderr
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    none = tb_profile(tmp_path, "summary", str(empty_dir))
    assert none.returncode == 3
    assert "plugins/profile/<session>" in none.stderr and "capture" in none.stderr
    assert tb_profile(tmp_path, "summary", str(server.logdir / "no_xplane")).returncode == 3
    for bad in ("bad_truncated", "bad_random", "bad_empty"):
        result = tb_profile(tmp_path, "summary", str(server.logdir / bad))
        assert result.returncode == 4, (bad, result.stderr)
        assert "h.xplane.pb" in result.stderr
    corrupt = tmp_path / "h.xplane.pb"
    corrupt.write_bytes(os.urandom(2048))
    assert tb_profile(tmp_path, "diff", str(corrupt), str(DATA_DIR / "tfdata_slow")
                      ).returncode == 4
    assert tb_profile(tmp_path, "view", str(corrupt), "overview_page").returncode == 4
    usage = tb_profile(tmp_path, "summary")
    assert usage.returncode == 2 and "usage" in usage.stderr
    assert tb_profile(tmp_path, "diff", str(DATA_DIR / "tfdata_slow")).returncode == 2
    unknown = tb_profile(tmp_path, "view", str(DATA_DIR / "tfdata_slow"), "no_such_view")
    assert unknown.returncode == 2 and "overview_page" in unknown.stderr
    both = tb_profile(tmp_path, "view", str(DATA_DIR / "tfdata_slow"), "overview_page",
                      "--json", "--csv")
    assert both.returncode == 2
    wrong_host = tb_profile(tmp_path, "summary", str(DATA_DIR / "tfdata_slow"), "--host", "x")
    assert wrong_host.returncode == 3 and "vm" in wrong_host.stderr


def _on_a_terminal(tmp: Path, args: list[str], **env: str) -> tuple[int, str, str]:
    """Runs the script with stdout and stderr on pseudo-terminals; returns what each got."""
    out_master, out_slave = pty.openpty()
    err_master, err_slave = pty.openpty()
    process = subprocess.Popen([_script(), *args], stdout=out_slave, stderr=err_slave,
                               env=_env(tmp, **env))
    os.close(out_slave)
    os.close(err_slave)
    received = {out_master: b"", err_master: b""}
    open_fds = set(received)
    while open_fds:
        ready, _, _ = select.select(list(open_fds), [], [], 300)
        assert ready, "tb-profile hung"
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the script closed its end
                chunk = b""
            if chunk:
                received[fd] += chunk
            else:
                open_fds.discard(fd)
                os.close(fd)
    code = process.wait(timeout=300)
    return code, received[out_master].decode(), received[err_master].decode()


def test_colour_and_progress_only_on_a_terminal(tmp_path: Path) -> None:
    path = str(DATA_DIR / "two_hosts")
    code, out, err = _on_a_terminal(tmp_path, ["summary", path],
                                    TB_PROFILE_PROGRESS_MIN_BYTES="0")
    assert code == 0
    assert "\x1b[1m" in out  # bold headings on a terminal
    assert "reading 127.0.0.1_60401" in err and "] " in err and "analysing" in err
    code, out, err = _on_a_terminal(tmp_path, ["summary", path], NO_COLOR="1")
    assert code == 0 and "\x1b[" not in out
    assert err == ""  # two small files: under the default size, no bar
    piped = tb_profile(tmp_path, "summary", path, TB_PROFILE_PROGRESS_MIN_BYTES="0")
    assert piped.returncode == 0 and piped.stderr == ""


def test_diff_compares_ops_per_step_and_warns_on_step_counts(
    server: Server, tmp_path: Path
) -> None:
    """A 6-step capture against a 127-step one: ops per step (each side's self time over its
    own steps, as the tensorflow_stats route serves it), the counts named, a warning."""
    slow, pod = str(DATA_DIR / "tfdata_slow"), str(DATA_DIR / "two_hosts")
    result = tb_profile(tmp_path, "diff", slow, pod, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    steps_a, steps_b = doc["a"]["num_steps"], doc["b"]["num_steps"]
    assert steps_b > 2 * steps_a > 0 and doc["op_basis"] == "per_step"
    stats = [server.get_json("data", run=_run_of(server, fixture), tag="tensorflow_stats",
                             host=host, include_idle="false")
             for fixture, host in (("tfdata_slow", doc["a"]["host"]),
                                   ("two_hosts", doc["b"]["host"]))]
    totals = [{(r["host_or_device"], r["op_name"]): r["total_self_time_us"] / 1e3
               for r in table["rows"]} for table in stats]
    for op in doc["ops"]:
        key = (op["host_or_device"], op["op_name"])
        assert op["a_ms"] == pytest.approx(totals[0].get(key, 0.0) / steps_a, rel=1e-9)
        assert op["b_ms"] == pytest.approx(totals[1].get(key, 0.0) / steps_b, rel=1e-9)
    warning = doc["step_count_warning"]
    assert warning.startswith(f"A has {steps_a} steps and B {steps_b} (")
    text = tb_profile(tmp_path, "diff", slow, pod)
    assert text.returncode == 0, text.stderr
    assert max(len(line) for line in text.stdout.splitlines()) <= 80
    assert (f"Ops whose self time per step changed most (A total / {steps_a}, "
            f"B total / {steps_b} steps)") in text.stdout
    assert f"  warning: A has {steps_a} steps and B {steps_b} (" in text.stdout
    assert " ".join(text.stdout.split()).count(" ".join(warning.split())) == 1
    top = doc["ops"][0]
    assert f"{top['a_ms']:>9.3f} {top['b_ms']:>9.3f}" in text.stdout
