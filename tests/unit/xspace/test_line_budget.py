"""The decoder's byte budget for large lines walked side by side (line_budget.LineBudget): two
streams of a 2M-event 8-GPU capture (~20 MB each) walk together, two of a 10M one (~120 MB
each) one after the other, and small lines never wait."""

from __future__ import annotations

import threading
import time

from tb_profile_plugin.xspace import decode, line_budget

MIB = 1 << 20


def _most_at_once(budget_bytes: int, sizes: list[int]) -> int:
    """How many of `sizes` were walked at once at most, each walk held 50 ms, all started
    together."""
    budget = line_budget.LineBudget(budget_bytes)
    lock = threading.Lock()
    now, most = [0], [0]
    start = threading.Barrier(len(sizes))

    def walk(size: int) -> None:
        start.wait()
        with budget.walking(size):
            with lock:
                now[0] += 1
                most[0] = max(most[0], now[0])
            time.sleep(0.05)
            with lock:
                now[0] -= 1

    threads = [threading.Thread(target=walk, args=(size,)) for size in sizes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert not any(thread.is_alive() for thread in threads)
    return most[0]


def test_large_lines_within_the_budget_walk_together() -> None:
    assert _most_at_once(64 * MIB, [20 * MIB, 20 * MIB, 20 * MIB]) == 3


def test_lines_over_the_budget_walk_one_at_a_time() -> None:
    assert _most_at_once(64 * MIB, [40 * MIB, 40 * MIB, 40 * MIB]) == 1
    assert _most_at_once(64 * MIB, [100 * MIB, 100 * MIB]) == 1  # (each alone over it)


def test_small_lines_never_wait() -> None:
    small = line_budget.LARGE_LINE_BYTES - 1
    assert _most_at_once(64 * MIB, [100 * MIB, small, small, small]) == 4


def test_the_largest_lines_are_walked_first_and_kept_in_file_order(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`_decode_planes` hands the threads the lines largest first (they finish together), and
    the profile has its lines in the file's order all the same."""
    from pathlib import Path

    from tb_profile_plugin import column_threads

    capture = next((Path(__file__).resolve().parents[2] / "data" / "jax_gpu_conv")
                   .glob("**/*.xplane.pb"))
    handed: list[int] = []
    real = column_threads.map_lines

    def recording(function, items, work):  # type: ignore[no-untyped-def]
        if items and isinstance(items[0], tuple):
            handed.extend(hi - lo for lo, hi in items)
        return real(function, items, work)

    monkeypatch.setattr(decode.column_threads, "map_lines", recording)
    profile = decode.decode_xspace(capture.read_bytes())
    assert len(handed) > 1 and handed == sorted(handed, reverse=True)
    monkeypatch.setattr(decode.column_threads, "map_lines", real)
    in_order = decode.decode_xspace(capture.read_bytes(), pure=True)  # (one thread, in order)
    assert [[(ln.id, ln.name, len(ln.events)) for ln in p.lines] for p in profile.planes] == [
        [(ln.id, ln.name, len(ln.events)) for ln in p.lines] for p in in_order.planes]


def test_spare_memory_is_reused_for_a_line_of_like_size() -> None:
    """Lines come largest first: spare memory serves a line of half its size or more, and
    is let go once a line needs less (no later one fits it) or the small lines come."""
    budget = line_budget.LineBudget(256 * MIB)
    with budget.walking(100 * MIB) as first:
        assert first is not None and len(first) == 100 * MIB
    with budget.walking(60 * MIB) as again:  # at most twice as large: the same memory
        assert again is first
    assert budget.held() == 100 * MIB  # (kept for the next line)
    with budget.walking(20 * MIB) as smaller:  # less than half: fresh memory, the large gone
        assert smaller is not first and smaller is not None and len(smaller) == 20 * MIB
        assert budget.held() == 20 * MIB
    with budget.walking(line_budget.LARGE_LINE_BYTES - 1) as small:
        assert small is None  # (a small line reads fresh bytes)
    assert budget.held() == 0  # (the small lines came: nothing kept)


def test_what_is_held_never_passes_the_budget_and_no_walk_waits_forever() -> None:
    """Lines walked on four threads, the budget one line: at most one line's memory (in flight
    or spare) is held at any time, and every line is walked (a thread with no more lines holds
    no spare memory that another waits for)."""
    sizes = [40 * MIB, 40 * MIB, 30 * MIB, 50 * MIB, 12 * MIB, 40 * MIB, 9 * MIB, 60 * MIB]
    budget = line_budget.LineBudget(60 * MIB)
    lock = threading.Lock()
    most, walked = [0], []
    queue = list(sizes)

    def worker() -> None:
        while True:
            with lock:
                if not queue:
                    return
                size = queue.pop(0)
            with budget.walking(size) as memory:
                assert memory is not None and len(memory) >= size
                with lock:
                    most[0] = max(most[0], budget.held())
                time.sleep(0.01)
            with lock:
                walked.append(size)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not any(thread.is_alive() for thread in threads)
    assert sorted(walked) == sorted(sizes)
    assert most[0] <= 60 * MIB


def test_bytes_in_memory_are_admitted_without_memory() -> None:
    """A decode of bytes in memory reads its lines as views: a large line is admitted under the
    budget, and no memory is made for it (an 8 MiB string's line cost its size twice)."""
    budget = line_budget.LineBudget(64 * MIB)
    with budget.walking(40 * MIB, reuse=False) as memory:
        assert memory is None and budget.held() == 40 * MIB
    assert budget.held() == 0
    assert _most_at_once(64 * MIB, [40 * MIB, 40 * MIB]) == 1  # (still one at a time)
