"""`tb-profile export`: Chrome trace JSON and Perfetto protobuf of the real captures.

Both are checked against protobuf's own parse of the files: one complete event (Chrome) or one
SLICE_BEGIN/SLICE_END pair (Perfetto) per XSpace event, with the event's name and duration.
The Perfetto file is read back with a small protobuf wire reader written here.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from tb_profile_plugin.cli import main
from tb_profile_plugin.xspace.pb import xplane_pb2
from tests.fixtures import DATA_DIR

CASES = {
    "keras_fit": "keras_fit/train/plugins/profile",
    "tfdata_parallel": "tfdata_parallel/plugins/profile",
    "two_hosts": "two_hosts/plugins/profile",  # both hosts on one axis
}


def _session(case: str) -> Path:
    return next((DATA_DIR / CASES[case]).iterdir())


def _xspace_events(session: Path) -> collections.Counter[tuple[str, int]]:
    """(name, duration in ps) of every event of every host file, by protobuf."""
    found: collections.Counter[tuple[str, int]] = collections.Counter()
    for path in session.glob("*.xplane.pb"):
        space = xplane_pb2.XSpace.FromString(path.read_bytes())
        for plane in space.planes:
            for line in plane.lines:
                for event in line.events:
                    found[(plane.event_metadata[event.metadata_id].name, event.duration_ps)] += 1
    return found


@pytest.mark.parametrize("case", list(CASES))
def test_chrome_json_one_complete_event_per_xspace_event(case: str, tmp_path: Path) -> None:
    session = _session(case)
    out = tmp_path / "trace.json"
    assert main(["export", str(session), "--format", "chrome-json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    complete = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    expected = _xspace_events(session)
    assert len(complete) == sum(expected.values())
    got = collections.Counter((e["name"], round(e["dur"] * 1e6)) for e in complete)
    assert got == expected
    assert min(e["ts"] for e in complete) == 0.0
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] in ("process_name", "thread_name")}
    assert all((e["pid"], e["tid"]) in names for e in complete)
    assert not (tmp_path / "trace.json.partial").exists()


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) of one message: varints as ints, length-delimited as bytes."""
    out: list[tuple[int, int | bytes]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            out.append((field, value))
        elif wire == 2:
            length, at = _varint(data, at)
            out.append((field, data[at : at + length]))
            at += length
        else:
            raise AssertionError(f"unexpected wire type {wire}")
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_perfetto_parses_back(case: str, tmp_path: Path) -> None:
    session = _session(case)
    out = tmp_path / "trace.pftrace"
    assert main(["export", str(session), "--format", "perfetto", "-o", str(out)]) == 0
    packets = [p for f, p in _fields(out.read_bytes()) if f == 1]
    names: dict[int, str] = {}
    tracks: dict[int, str] = {}
    begins: collections.Counter[str] = collections.Counter()
    open_slices: dict[int, list[tuple[str, int]]] = collections.defaultdict(list)
    durations: collections.Counter[tuple[str, int]] = collections.Counter()
    for packet in packets:
        assert isinstance(packet, bytes)
        fields = dict(_fields(packet))
        if 12 in fields:  # interned event names
            for f, entry in _fields(fields[12]):  # type: ignore[arg-type]
                assert f == 2
                entry_fields = dict(_fields(entry))  # type: ignore[arg-type]
                names[entry_fields[1]] = entry_fields[2].decode()  # type: ignore[union-attr]
        if 60 in fields:
            descriptor = dict(_fields(fields[60]))  # type: ignore[arg-type]
            tracks[descriptor[1]] = "thread" if 4 in descriptor else "process"  # type: ignore[index]
        if 11 in fields:
            event = dict(_fields(fields[11]))  # type: ignore[arg-type]
            track = event[11]
            assert tracks[track] == "thread"  # type: ignore[index]
            name = names[event[10]]  # type: ignore[index]
            stack = open_slices[track]  # type: ignore[index]
            if event[9] == 1:
                begins[name] += 1
                stack.append((name, fields[8]))  # type: ignore[arg-type]
            else:
                assert event[9] == 2 and stack, "an end without an open slice"
                begun, at = stack.pop()
                durations[(begun, fields[8] - at)] += 1  # type: ignore[operator]
    expected = _xspace_events(session)
    assert sum(begins.values()) == sum(expected.values())
    assert all(not stack for stack in open_slices.values())
    by_name: collections.Counter[str] = collections.Counter()
    for (name, _), count in expected.items():
        by_name[name] += count
    assert begins == by_name
    # properly nested events close their own slice: the durations agree (to the ns)
    expected_ns: collections.Counter[tuple[str, int]] = collections.Counter()
    for (name, duration_ps), count in expected.items():
        expected_ns[(name, duration_ps // 1000)] += count
    matched = sum((durations & expected_ns).values())
    assert matched >= 0.99 * sum(expected.values())
