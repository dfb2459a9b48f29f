"""Hostile host files (tests/hostile_corpus.py) through a real TensorBoard and the real CLI.

Over 300 variants of real captures (truncated, flipped, special files, hostile content) are
served by a TensorBoard process with default settings, and the special files again by one
that follows links (TB_PROFILE_FOLLOW_LINKS=1). Every route a view uses is asked for each
variant, a few threads at a time. The test holds: no 500, no request over 10 s, the server
alive and under 1 GB peak RSS, still serving a good run afterwards; no error names the
server's directories; a file that cannot be a profile is a 422 with a sentence; nothing outside
the logdir is listed. The `tb-profile` script, on a sample of the variants, exits 0, 3 or 4
with one line on stderr and no traceback (4 for a file that cannot be a profile).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fixtures import session_dir
from tests.hostile_corpus import HOST, SESSION, Variant, build_corpus
from tests.integration.conftest import PREFIX, Server, start_tensorboard, stop

REQUEST_LIMIT_S = 10.0
PEAK_RSS_LIMIT_BYTES = 2**30
#: The servers keep at most this much decoded (TB_PROFILE_MEMORY_CACHE_BYTES): the peak RSS
#: then shows what hostile files cost beyond the bound, not how many of them the cache holds.
SERVER_ENV = {"TB_PROFILE_MEMORY_CACHE_BYTES": str(128 * 2**20)}
THREADS = 4
GOOD_RUN = f"good/{SESSION}"


@dataclass(frozen=True)
class Answer:
    route: str
    status: int  # 0: no answer within REQUEST_LIMIT_S
    seconds: float
    body: str


@dataclass(frozen=True)
class Corpus:
    root: Path
    logdir: Path
    variants: list[Variant]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("hostile")
    logdir = root / "logdir"
    shutil.copytree(session_dir("custom_loop"), logdir / "good" / "plugins" / "profile" / SESSION)
    variants = build_corpus(logdir, root / "outside")
    assert len(variants) >= 300
    return Corpus(root, logdir, variants)


def _ask(server: Server, route: str, **params: str) -> Answer:
    url = f"{server.base_url}{PREFIX}/{route}?{urllib.parse.urlencode(params)}"
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=REQUEST_LIMIT_S) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    except (TimeoutError, urllib.error.URLError, ConnectionError):
        status, body = 0, b""
    return Answer(f"{route}?{urllib.parse.urlencode(params)}", status,
                  time.monotonic() - started, body.decode("utf-8", "replace"))


def _probe(server: Server, variant: Variant) -> list[Answer]:
    """Every route a user's browser would ask for this run, as far as the answers lead."""
    run = variant.run
    tools = _ask(server, "run_tools", run=run)
    answers = [tools, _ask(server, "hosts", run=run)]
    views = json.loads(tools.body) if tools.status == 200 else []
    for view in dict.fromkeys(["overview_page", "trace_viewer", *views]):
        answers.append(_ask(server, "hosts", run=run, tag=view))
        answers.append(_ask(server, "data", run=run, tag=view, host=HOST))
    if variant.group == "multi":
        for view in ("overview_page", "trace_viewer", "pod_viewer", "tensorflow_stats"):
            answers.append(_ask(server, "data", run=run, tag=view, host="ALL_HOSTS"))
            answers.append(_ask(server, "data", run=run, tag=view, host="good"))
    if answers[-1].status == 200 or "trace_viewer" in views:
        answers += [
            _ask(server, "data", run=run, tag="trace_viewer", host=HOST,
                 start_time_ms="0", end_time_ms="1", resolution="100"),
            _ask(server, "trace_event", run=run, host=HOST, event_id="0"),
            _ask(server, "trace_event", run=run, host=HOST, event_id="99"),
            _ask(server, "trace_search", run=run, host=HOST, q="a"),
        ]
    return answers


def _probe_all(server: Server, variants: list[Variant]) -> dict[str, list[Answer]]:
    _ask(server, "runs")
    print(f"\nserver RSS before the corpus: {_rss_bytes(server.process.pid) / 2**20:.0f} MiB")
    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(lambda v: _probe(server, v), variants))
    return {v.name: answers for v, answers in zip(variants, results, strict=True)}


def _status_bytes(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {key} in /proc/PID/status")


def _peak_rss_bytes(pid: int) -> int:
    return _status_bytes(pid, "VmHWM")


def _rss_bytes(pid: int) -> int:
    return _status_bytes(pid, "VmRSS")


def _check_server(server: Server, corpus: Corpus, answers: dict[str, list[Answer]]) -> None:
    everything = [a for per in answers.values() for a in per]
    statuses: dict[int, int] = {}
    for answer in everything:
        statuses[answer.status] = statuses.get(answer.status, 0) + 1
    slowest = max(everything, key=lambda a: a.seconds)
    peak = _peak_rss_bytes(server.process.pid)
    print(f"\n{len(answers)} variants, {len(everything)} requests, statuses {statuses}, "
          f"slowest {slowest.seconds:.2f} s ({slowest.route}), peak RSS {peak / 2**20:.0f} MiB")
    failures = [f"{name}: {a.route} -> {a.status} {a.body[:300]}"
                for name, per in answers.items() for a in per
                if a.status not in (200, 400, 404, 422)]
    assert not failures, "\n".join(failures[:20])
    assert slowest.seconds <= REQUEST_LIMIT_S
    for answer in everything:
        if answer.status != 200:
            error = json.loads(answer.body)["error"]
            assert error and str(corpus.root) not in error, (answer.route, error)
    assert server.process.poll() is None, "the server died"
    assert peak <= PEAK_RSS_LIMIT_BYTES, f"peak RSS {peak / 2**20:.0f} MiB"
    good = _ask(server, "data", run=GOOD_RUN, tag="overview_page", host="vm")
    assert good.status == 200 and json.loads(good.body)["steps"], good.body[:300]


def _data_status(answers: list[Answer]) -> int:
    return next(a.status for a in answers if a.route.startswith("data?") and "overview" in a.route)


@pytest.fixture(scope="module")
def default_server(corpus: Corpus) -> Iterator[Server]:
    (corpus.root / "default").mkdir()
    running = start_tensorboard(corpus.logdir, corpus.root / "default", env=SERVER_ENV)
    yield running
    stop(running)


def test_server_answers_every_variant_without_500(
    corpus: Corpus, default_server: Server
) -> None:
    answers = _probe_all(default_server, corpus.variants)
    _check_server(default_server, corpus, answers)
    listed = set(json.loads(_ask(default_server, "runs").body))
    for variant in corpus.variants:
        status = _data_status(answers[variant.name])
        if variant.hidden:
            assert variant.run not in listed, variant.name
            assert status == 404, (variant.name, answers[variant.name][0].body)
        elif variant.must_refuse:
            assert status == 422, (variant.name, status, answers[variant.name][-1].body)
    assert GOOD_RUN in listed


def test_server_following_links_refuses_special_files(corpus: Corpus) -> None:
    specials = [v for v in corpus.variants if v.group == "special"]
    (corpus.root / "follow").mkdir()
    server = start_tensorboard(corpus.logdir, corpus.root / "follow",
                               env={**SERVER_ENV, "TB_PROFILE_FOLLOW_LINKS": "1"})
    try:
        answers = _probe_all(server, specials)
        _check_server(server, corpus, answers)
    finally:
        stop(server)
    for variant in specials:
        status = _data_status(answers[variant.name])
        if variant.follow_ok:
            assert status == 200, variant.name
        elif variant.must_refuse:
            assert status == 422, (variant.name, status)


def _cli_sample(variants: list[Variant]) -> list[Variant]:
    """Every special and structural variant, and every fourth truncation and flip."""
    return [v for i, v in enumerate(variants) if v.group in ("special", "struct") or i % 4 == 0]


def _tb_profile(args: list[str], env: dict[str, str]) -> tuple[int, str, float]:
    script = shutil.which("tb-profile")
    assert script, "tb-profile is not on PATH: pip install -e ."
    started = time.monotonic()
    try:
        done = subprocess.run([script, *args], capture_output=True, text=True, env=env,
                              timeout=REQUEST_LIMIT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return -1, "timed out", time.monotonic() - started
    return done.returncode, done.stderr, time.monotonic() - started


def test_cli_exits_with_one_line_and_no_traceback(corpus: Corpus) -> None:
    env = dict(os.environ, TB_PROFILE_CACHE_DIR=str(corpus.root / "cli-cache"))
    sample = _cli_sample(corpus.variants)

    def run(variant: Variant) -> list[tuple[str, int, str, float]]:
        runs = []
        for args in (["summary", str(variant.session_dir(corpus.logdir))],
                     ["view", str(variant.host_file(corpus.logdir)), "trace_viewer", "--json"]):
            code, stderr, seconds = _tb_profile(args, env)
            runs.append((args[0], code, stderr, seconds))
        return runs

    with ThreadPoolExecutor(THREADS) as pool:
        results = dict(zip(sample, pool.map(run, sample), strict=True))
    codes: dict[int, int] = {}
    failures = []
    for variant, runs in results.items():
        for command, code, stderr, _ in runs:
            codes[code] = codes.get(code, 0) + 1
            lines = stderr.strip().splitlines()
            if code not in (0, 3, 4) or "Traceback" in stderr or (
                    code and (len(lines) != 1 or not lines[0].startswith("tb-profile: "))):
                failures.append(f"{variant.name} {command}: exit {code}: {stderr[-500:]}")
        summary_code, view_code = runs[0][1], runs[1][1]
        if variant.must_refuse and not variant.hidden and summary_code != 4:
            failures.append(f"{variant.name} summary: exit {summary_code}, not 4")
        if variant.must_refuse and view_code != 4:
            failures.append(f"{variant.name} view: exit {view_code}, not 4: {runs[1][2]}")
    slowest = max(seconds for runs in results.values() for *_, seconds in runs)
    print(f"\nCLI: {len(sample)} variants, exit codes {codes}, slowest {slowest:.2f} s")
    assert not failures, "\n".join(failures[:20])
