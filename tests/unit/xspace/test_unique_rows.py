"""unique_rows equals numpy's row-wise unique: rows, first rows and inverse, both paths."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.xspace.unique_rows import unique_ints, unique_rows


def _assert_like_numpy(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`unique_rows(rows, return_index=True)` is numpy's row-wise unique, first rows, inverse
    (1-D); numpy's (unique, inverse)."""
    unique, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    got_unique, got_first, got_inverse = unique_rows(rows, return_index=True)
    assert np.array_equal(got_unique, unique)
    assert np.array_equal(got_first, first)
    assert np.array_equal(got_inverse, inverse.reshape(-1))
    assert got_inverse.ndim == 1
    return unique, inverse


@pytest.mark.parametrize("wide", [0, 1, 12], ids=["one key", "ranked", "records"])
def test_unique_rows_equals_numpy(wide: int) -> None:
    """`wide` columns hold 64-bit values: one is ranked into the key; twelve (past one int64
    key even as ranks, at 60 rows) take numpy's record sort."""
    rng = np.random.default_rng(8)
    for _ in range(500):
        n, k = int(rng.integers(0, 60)), int(rng.integers(1, 6))
        if wide == 12:
            n = 60
        rows = rng.integers(-1, int(rng.integers(1, 8)), (n, k)).astype(np.int64)
        if wide and n:  # spans whose product passes one int64 key
            k = max(k, wide)
            rows = np.concatenate([rng.integers(-2**62, 2**62, (n, wide)),
                                   rng.integers(-1, 4, (n, k - wide))], axis=1).astype(np.int64)
            rows[n // 2:, :wide] = rows[: n - n // 2, :wide]  # repeats among the wide values
        unique, inverse = _assert_like_numpy(rows)
        plain_unique, plain_inverse = unique_rows(rows)
        assert np.array_equal(plain_unique, unique)
        assert np.array_equal(plain_inverse, inverse.reshape(-1))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.uint8, np.uint64])
def test_unique_ints_equals_numpy(dtype: type) -> None:
    """Both paths (a tabled range; a range too wide for a table, sorted) give numpy's unique,
    first occurrences and inverse, in numpy's dtypes."""
    rng = np.random.default_rng(11)
    info = np.iinfo(dtype)
    for _ in range(300):
        n = int(rng.integers(0, 200))
        low = max(int(info.min), -int(rng.integers(0, 50)))
        span = int(rng.choice([1, 5, 3 * n + 2000, 10**12]))
        high = min(int(info.max), low + span)
        values = rng.integers(low, high, n, endpoint=True).astype(dtype)
        for index in (False, True):
            for inverse in (False, True):
                expected = np.unique(values, return_index=index, return_inverse=inverse)
                expected = expected if isinstance(expected, tuple) else (expected,)
                got = unique_ints(values, return_index=index, return_inverse=inverse)
                assert len(got) == len(expected)
                for mine, theirs in zip(got, expected, strict=True):
                    theirs = np.asarray(theirs).reshape(-1)
                    assert mine.dtype == theirs.dtype
                    assert np.array_equal(mine, theirs)


def test_unique_ints_tables_a_dense_range() -> None:
    """Codes of two million events over a few thousand values take the table path (no sort),
    with numpy's answer."""
    values = np.random.default_rng(2).integers(-1, 3000, 2_000_000).astype(np.int32)
    unique, first, inverse = unique_ints(values, return_index=True, return_inverse=True)
    expected = np.unique(values, return_index=True, return_inverse=True)
    assert np.array_equal(unique, expected[0])
    assert np.array_equal(first, expected[1])
    assert np.array_equal(inverse, expected[2])


def test_sparse_code_rows_are_joined_by_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Code columns whose ranges multiply past the table (text codes numbered profile-wide, as
    the kernel table's five columns at 10M events) but with few distinct rows: joined column by
    column through ranks, never numpy's sort of a sparse key, and numpy's answer."""
    from tb_profile_plugin.xspace import unique_rows as module

    sorts: list[int] = []
    real = module._np_unique
    monkeypatch.setattr(module, "_np_unique",
                        lambda v, *a: sorts.append(len(v)) or real(v, *a))  # type: ignore[func-returns-value]
    rng = np.random.default_rng(31)
    pool = np.stack([rng.integers(-1, 3000, 40) for _ in range(5)], axis=1)
    rows = pool[rng.integers(0, len(pool), 20_000)]
    assert float(np.prod(np.ptp(rows, axis=0) + 1.0)) > 2 * len(rows) + 1024  # past one table
    _assert_like_numpy(rows)
    assert sorts == []  # every unique of the join was a table of a dense range


@pytest.mark.parametrize("part_rows", [1 << 16, 7, 1])
def test_keys_built_in_parts_equal_numpy(part_rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key passes run `_PART_ROWS` rows at a time: every part size gives numpy's unique,
    on each way to a key (one mixed radix; ranked joins, each column and join by a table or,
    where its range is too wide, by a sort)."""
    from tb_profile_plugin.xspace import unique_rows as module
    monkeypatch.setattr(module, "_PART_ROWS", part_rows)
    rng = np.random.default_rng(21)
    for _ in range(200):
        n, k = int(rng.integers(1, 80)), int(rng.integers(1, 6))
        spans = rng.choice([2, 9, 40, 10**6], k)  # (10**6: a column ranked by a sort)
        rows = np.stack([rng.integers(-1, int(s), n) for s in spans], axis=1).astype(np.int64)
        rows[n // 2:] = rows[: n - n // 2]  # repeated rows
        _assert_like_numpy(rows)
