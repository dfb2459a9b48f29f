"""The compiled walk straight into dense stats (`_wire.decode_line_dense`, decode.py's
`_decode_line_dense`): no column per stat row, yet the very columns (dtype and values) that
the row walk and `densify` give, and the pure path's; lines it does not do go that way."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.xspace import decode, dense_stats
from tests.unit.xspace.test_decode_line_narrow import _assert_same, _line_bytes

pytestmark = pytest.mark.skipif(not decode.compiled_decoder_available(),
                                reason="compiled decoder not built")


def _by_rows(data: bytes, monkeypatch: pytest.MonkeyPatch) -> decode._RawLine:
    """The line by the row walk and `densify` (the dense walk turned off)."""
    with monkeypatch.context() as patch:
        patch.setattr(decode, "walk_line_dense", lambda line_bytes: None)
        return decode._decode_line(lambda: memoryview(data), False)


def _walked(data: bytes) -> bool:
    """Whether the dense walk does the line itself (else it leaves it to the row walk)."""
    return decode._decode_line_dense(memoryview(data), decode._RawLine())


def _check(data: bytes, monkeypatch: pytest.MonkeyPatch, walked: bool) -> decode._RawLine:
    compiled = decode._decode_line(lambda: memoryview(data), False)
    _assert_same(_by_rows(data, monkeypatch), compiled)
    _assert_same(decode._decode_line(lambda: memoryview(data), True), compiled)
    assert _walked(data) is walked
    return compiled


def _device_stats(k: int) -> list[tuple[int, int | str]]:
    """A kernel's stats: a few of few values, a string, one unique per event."""
    return [(9, 1000 + k), (10, 2**48 + k % 7), (11, f"details {k % 3}"), (12, 65),
            (13, 2**38 + k % 300)]


def test_a_device_line_is_coded_in_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _line_bytes([1 + k % 3 for k in range(600)], [_device_stats(k) for k in range(600)])
    line = _check(data, monkeypatch, walked=True)
    assert len(line.dense_stats.dense_ids) == 5
    assert len(line.dense_stats) == 0  # (no sparse row)


def test_rows_that_stay_sparse_are_written_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stat on 1% of the events (too few), one of a value per event on a third of them (its
    codes and table cost more than its rows), one twice on an event, strings of 300 bytes
    among the sparse rows: those rows stay sparse, in file order, lengths as wide as the
    line's longest."""
    stats = []
    for k in range(1000):
        row = _device_stats(k)
        if k % 100 == 7:
            row.append((20, "x" * 300 if k == 307 else "rare"))
        if k % 3 == 0:
            row.append((21, 10**12 + 977 * k))
        if k == 500:
            row += [(22, 1), (22, 2)]
        stats.append(row)
    data = _line_bytes([5] * 1000, stats)
    line = _check(data, monkeypatch, walked=True)
    sparse = line.dense_stats
    assert sorted(set(sparse.metadata_id.tolist())) == [20, 21, 22]
    assert sparse.length.dtype == np.uint16
    assert len(sparse.dense_ids) == 5


def test_a_line_without_dense_stats_keeps_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    stats = [[(30 + k % 50, f"s{k}")] for k in range(400)]  # each stat too rare
    line = _check(_line_bytes([2] * 400, stats), monkeypatch, walked=True)
    assert len(line.dense_stats) == 400
    assert len(line.dense_stats.dense_ids) == 0
    assert len(line.dense_stats.order_ids) == 50


@pytest.mark.parametrize("case", ["order", "many ids", "wide id", "negative id", "long string"])
def test_lines_the_walk_leaves_to_the_rows(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Events that list their stats in two orders, more than 64 stat ids, ids past 65535 or
    negative, a string too long to tell apart in C: the row walk does the line."""
    stats = [_device_stats(k) for k in range(300)]
    if case == "order":
        stats[100] = list(reversed(stats[100]))
    elif case == "many ids":
        stats[3] = stats[3] + [(100 + j, j) for j in range(70)]
    elif case == "wide id":
        stats[3] = stats[3] + [(70_000, 1)]
    elif case == "negative id":
        stats[3] = stats[3] + [(-4, 1)]
    else:
        stats[3] = [(11, "y" * 70_000) if sid == 11 else (sid, v) for sid, v in stats[3]]
    _check(_line_bytes([1] * 300, stats), monkeypatch, walked=False)


def test_lines_without_stats_or_events(monkeypatch: pytest.MonkeyPatch) -> None:
    for data in (_line_bytes([], []), _line_bytes([1, 2, 3], [[], [], []])):
        line = _check(data, monkeypatch, walked=True)
        assert len(line.dense_stats) == 0


def test_a_malformed_line_is_refused_as_before() -> None:
    data = _line_bytes([1] * 10, [_device_stats(k) for k in range(10)])
    assert dense_stats.walk_line_dense(memoryview(data[:-3])) is None
    with pytest.raises(decode.UnreadableProfile):
        decode._decode_line(lambda: memoryview(data[:-3]), False)


def test_the_dense_walk_holds_no_row_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the walk hands over for a line whose stats are all dense: event columns, codes and
    tables, no sparse row column, empty or full (the rows' 18 bytes each are what it saves)."""
    n = 5000
    data = _line_bytes([1] * n, [_device_stats(k) for k in range(n)])
    walked = dense_stats.walk_line_dense(memoryview(data))
    assert walked is not None
    plan = walked[-1]
    assert walked[-2] == 5 * n  # stat rows walked
    assert all(len(memoryview(column)) == 0 for column in plan[5:10])
    line = _check(data, monkeypatch, walked=True)
    assert len(line.dense_stats) == 0


def test_a_host_line_is_walked_twice_and_gives_up_hopeless_ids(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A host thread's line (a stat or so an event): a stat of a distinct id per event on a
    third of them is given up once its distinct values alone cost more than its rows (no
    table handed over; its rows stay sparse), one of a few wide values on as many events is
    written as rows in the codes' walk (it might have stayed sparse), then dropped from them
    as it turned out dense; a stat of wide values seen out of order is sorted. The columns
    are the row walk's and the pure path's."""
    n = 1000
    stats: list[list[tuple[int, int | str]]] = []
    for k in range(n):
        row: list[tuple[int, int | str]] = [(42, 10**15 * (k % 5) - 7)]
        if k % 3 == 0:
            row.append((41, 10**12 + 977 * k))  # increasing, one a row: hopeless
        if k % 3 == 1:
            row.append((40, 10**13 * (k % 4)))  # three wide values: dense after all
        if k % 50 == 0:
            row.append((43, f"rare {k}"))
        stats.append(row)
    data = _line_bytes([7] * n, stats)
    walked = dense_stats.walk_line_dense(memoryview(data))
    assert walked is not None
    ids_bytes, _, _, per_stat, keep_bytes, _, k_meta, *_ = walked[-1]
    by_id = dict(zip(np.frombuffer(ids_bytes, np.int64).tolist(), per_stat, strict=True))
    kept = dict(zip(np.frombuffer(ids_bytes, np.int64).tolist(),
                    np.frombuffer(keep_bytes, np.uint8).tolist(), strict=True))
    assert by_id[41] is None and kept[41] == 1  # given up: no table
    assert by_id[40] is not None and kept[40] == 0
    assert sorted(set(np.frombuffer(k_meta, np.int32).tolist())) == [41, 43]
    line = _check(data, monkeypatch, walked=True)
    assert sorted(line.dense_stats.dense_ids.tolist()) == [40, 42]
    assert sorted(set(line.dense_stats.metadata_id.tolist())) == [41, 43]
