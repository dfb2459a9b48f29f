"""The decoder's C-loop paths (xspace/kineto/fields.py, details.py) give what the per-value
rules give, on the values real traces hold and on the odd ones a file may hold (bools that
equal 1, numbers for names, lists for tids, missing args)."""

from __future__ import annotations

import numpy as np
import orjson

from tb_profile_plugin.xspace.kineto import fields as fl
from tb_profile_plugin.xspace.kineto.details import kernel_details, kernel_details_text

_KERNEL = {"registers per thread": 32, "shared memory": 0, "grid": [128, 1, 1],
           "block": [256, 1, 1], "est. achieved occupancy %": 50}


def test_kernel_details_per_distinct_launch_equal_the_per_kernel_text() -> None:
    same = [dict(_KERNEL) for _ in range(3)]
    varied = [
        {**_KERNEL, "registers per thread": 32.0},  # 1.0-style number: same text
        {**_KERNEL, "est. achieved occupancy %": 12.5},
        {**_KERNEL, "shared memory": "0"},  # a string: left out
        {**_KERNEL, "grid": [128, 1.5, 1]},  # a float in the grid: no grid
        {k: v for k, v in _KERNEL.items() if k != "est. achieved occupancy %"}
        | {"theoretical occupancy %": 75},
        {**_KERNEL, "registers per thread": None},
    ]
    args = same + varied
    assert kernel_details(args) == [kernel_details_text(a) for a in args]
    assert kernel_details(same)[0] == "regs:32 shm:0 grid:128,1,1 block:256,1,1 occ_pct:50"
    # Values a dict cannot tell apart (True == 1) or cannot hold (no grid, not a dict): the
    # per-kernel rule, the same answers.
    odd = [{**_KERNEL, "registers per thread": True}, dict(_KERNEL),
           {k: v for k, v in _KERNEL.items() if k != "grid"}, None, {**_KERNEL, "grid": [True]}]
    assert kernel_details(odd) == [kernel_details_text(a) for a in odd]
    assert kernel_details(odd)[0] == "shm:0 grid:128,1,1 block:256,1,1 occ_pct:50"


def test_codes_of_texts_and_other_values_in_first_seen_order() -> None:
    names = fl.Interner()
    assert names.codes_of(["b", "a", "b"]).tolist() == [0, 1, 0]
    # A name that is no string is its text (None -> "", numbers and lists as written).
    assert names.codes_of(["a", None, 3, [1, 2], "3"]).tolist() == [1, 2, 3, 4, 3]
    assert names.texts == ["b", "a", "", "3", "[1,2]"]
    assert names.codes_of(("c",)).tolist() == [5]


def test_thread_codes_by_pid_and_tid_as_keys() -> None:
    reader = fl._Reader(fl.Interner())
    # "7" and 7 are one thread (2021 writes both); True is not 1 ("True").
    pids = [1, 1, 1, 1, 2]
    tids = ["7", 7, 8, "stream 3", 7]
    assert reader._thread_codes(pids, tids).tolist() == [0, 0, 1, 2, 3]
    assert list(reader.thread_keys) == [(1, 7), (1, 8), (1, "stream 3"), (2, 7)]
    assert reader._thread_codes([1, True], [7, 7]).tolist() == [0, 4]
    assert reader._thread_codes([1], [[1, 2]]).tolist() == [5]
    assert list(reader.thread_keys)[4:] == [("True", 7), (1, "[1,2]")]


def test_columns_and_numbers() -> None:
    events = [{"ts": 1, "name": "a"}, {"ts": 2.5, "name": "b"}]
    assert [list(c) for c in fl._columns(events, ("ts", "name"))] == [[1, 2.5], ["a", "b"]]
    assert [list(c) for c in fl._columns(events + [{"ts": 3}], ("ts", "name"))] == [
        [1, 2.5, 3], ["a", "b", None]]
    got = fl.floats([1, 2.5, None, True, "3"])
    assert got[:2].tolist() == [1.0, 2.5] and np.isnan(got[2:]).all()
    assert fl.floats([1, 2**70]).tolist() == [1.0, float(2**70)]
    assert fl._ints_or_minus_one([5, 2**70, True, 1.0, "2"]).tolist() == [5, -1, -1, -1, -1]
    assert fl.per_distinct(["stream 7", 3, "x", 3], fl._number_or_minus_one).tolist() == [
        7, 3, -1, 3]
    assert fl.take(["a", "b", "c"], np.array([2, 0])) == ["c", "a"]
    assert fl.take(["a"], np.array([0])) == ["a"]
    assert fl.take(["a"], np.array([], np.int64)) == []



def test_json_args_one_after_the_other() -> None:
    values = [[[32, 64], [64, 32], [32]], ["float", 'a,"]b'], {"k": [1, 2]}, [], ["\\"],
              [1.5e300], {"é": "ü"}, [[]], [None, True]] * 1000  # several chunks
    blob, lengths = fl._encoded_json(values)
    assert (blob, lengths.tolist()) == (
        b"".join(map(orjson.dumps, values)), [len(orjson.dumps(v)) for v in values])
    assert fl._encoded_json([])[0] == b""
    # Cut by numpy (no backslash) and a value at a time (a backslash): the same bytes.
    for few in ([{"a": "}],[{"}, [1]], [["\\"], {"b": ","}], [[1]]):
        cut, each = fl._encoded_json(few), fl._encoded_json_each(few)
        assert (cut[0], cut[1].tolist()) == (each[0], each[1].tolist()) == (
            b"".join(map(orjson.dumps, few)), [len(orjson.dumps(v)) for v in few])
