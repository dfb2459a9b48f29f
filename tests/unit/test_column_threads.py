"""Per-line column work on a few threads (column_threads.py): the results of a loop, in order;
a failing item raises once every item has finished; small work and single-threaded processes
stay on the caller's thread. Real captures decode and index alike on threads and on one."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tb_profile_plugin import column_threads
from tb_profile_plugin.trace.index import build_index
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import xplane_files
from tests.unit.trace.test_trace_index_cache import _same
from tests.unit.xspace.test_decode import assert_same_as_protobuf


@pytest.fixture
def threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call with several items on 3 threads, however small its work."""
    monkeypatch.setattr(column_threads, "MIN_WORK", 0)
    monkeypatch.setenv(column_threads.THREADS_ENV, "3")
    monkeypatch.setattr(column_threads, "_single", False)


def test_results_come_back_in_order_from_several_threads(threaded: None) -> None:
    names: set[str] = set()

    def slow_square(x: int) -> int:
        names.add(threading.current_thread().name)
        time.sleep(0.002 * (10 - x))  # the first items finish last
        return x * x

    assert column_threads.map_lines(slow_square, list(range(10)), 10) == [
        x * x for x in range(10)]
    assert len(names) > 1 and threading.current_thread().name not in names


def test_a_failure_is_raised_after_every_item_finished(threaded: None) -> None:
    finished: list[int] = []

    def item(x: int) -> int:
        if x == 1:
            raise ValueError("item 1")
        time.sleep(0.02)
        finished.append(x)
        return x

    with pytest.raises(ValueError, match="item 1"):
        column_threads.map_lines(item, [0, 1, 2, 3], 4)
    assert sorted(finished) == [0, 2, 3]


def test_small_work_and_single_threaded_processes_stay_on_the_caller(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(column_threads.THREADS_ENV, "4")
    caller = threading.current_thread().name
    seen: list[str] = []

    def where(x: int) -> int:
        seen.append(threading.current_thread().name)
        return x

    column_threads.map_lines(where, [1, 2, 3], column_threads.MIN_WORK - 1)
    monkeypatch.setattr(column_threads, "_single", False)
    column_threads.single_threaded()
    assert column_threads.threads() == 1
    column_threads.map_lines(where, [1, 2, 3], column_threads.MIN_WORK * 8)
    assert set(seen) == {caller}
    monkeypatch.setattr(column_threads, "_single", False)
    assert column_threads.threads() == 4


@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: str(p.relative_to(p.parents[4])))
def test_real_captures_decode_and_index_alike_on_threads(path: Path, threaded: None,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    data = path.read_bytes()
    on_threads = decode_xspace(data, pure=False)
    assert_same_as_protobuf(data, on_threads)
    threaded_index = build_index(on_threads)
    monkeypatch.setenv(column_threads.THREADS_ENV, "1")
    one_thread = decode_xspace(data, pure=False)
    _same(threaded_index, build_index(one_thread))



def test_beside_runs_on_a_pool_thread_while_the_block_runs(threaded: None) -> None:
    import contextvars

    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="")
    marker.set("the request's")
    started, seen = threading.Event(), {}

    def work() -> None:
        seen["thread"] = threading.current_thread().name
        seen["context"] = marker.get()
        started.set()
        time.sleep(0.05)
        seen["done"] = True

    with column_threads.beside(work, 10):
        assert started.wait(5)  # (it runs while the block does)
        assert "done" not in seen
    assert seen == {"thread": seen["thread"], "context": "the request's", "done": True}
    assert seen["thread"] != threading.current_thread().name


def test_beside_leaves_small_work_and_failures_to_the_caller(
        threaded: None, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[int] = []
    monkeypatch.setattr(column_threads, "MIN_WORK", 100)
    with column_threads.beside(lambda: ran.append(1), 99):
        pass
    assert ran == []

    def fails() -> None:
        raise ValueError("left for the caller's own build")

    with column_threads.beside(fails, 100):  # (not raised here)
        pass


def test_overview_with_canonical_columns_beside_the_forest_equals_one_thread(
        threaded: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """host_analysis.analyze builds the canonical columns on a pool thread beside the forest,
    and the op tables beside the steps; the TensorFlow stats page its kernel statistics beside
    the op tables: the documents equal those of one thread, on every committed capture."""
    from tb_profile_plugin.json_text import json_bytes
    from tb_profile_plugin.tools import registry

    def overview(path: Path) -> bytes:  # (and the TensorFlow stats page on its own)
        pages = []
        for name in ("overview_page", "tensorflow_stats"):
            profile = decode_xspace(path.read_bytes())
            request = registry.ViewRequest("run", "host", {"host": profile}, {})
            pages.append(json_bytes(registry.VIEWS[name].build(request)))
        return b"\n".join(pages)

    paths = xplane_files()
    assert len(paths) >= 10
    for path in paths:
        threaded_doc = overview(path)
        monkeypatch.setenv(column_threads.THREADS_ENV, "1")
        try:
            assert overview(path) == threaded_doc
        finally:
            monkeypatch.setenv(column_threads.THREADS_ENV, "3")


def test_work_handed_to_the_pool_from_a_pool_thread_runs_there(threaded: None) -> None:
    """A pool thread waiting on work queued behind the other pool threads' could wait forever:
    from a pool thread, map_lines and beside run on the calling thread."""
    def inner() -> tuple[list[str], list[str]]:
        here = threading.current_thread().name
        mapped = column_threads.map_lines(lambda _: threading.current_thread().name,
                                          [1, 2, 3], 10)
        ran: list[str] = []
        with column_threads.beside(lambda: ran.append("ran"), 10):
            pass
        return [here], mapped + ran

    here, seen = column_threads.map_lines(lambda _: inner(), [0, 1], 10)[0]
    assert seen[:3] == here * 3 and seen[3:] == []


def test_beside_leaves_work_past_its_bound_to_the_caller(threaded: None) -> None:
    """Past `BESIDE_MAX_WORK` events two stages side by side would be the peak: one thread."""
    ran: list[int] = []
    with column_threads.beside(lambda: ran.append(1), column_threads.BESIDE_MAX_WORK + 1):
        pass
    assert ran == []
    with column_threads.beside(lambda: ran.append(1), column_threads.BESIDE_MAX_WORK):
        pass
    assert ran == [1]
