"""Decode `.xplane.pb` bytes (or a local file, a range at a time) into a columnar `Profile`.

Protobuf parses the small structure (planes, metadata tables, plane stats) and hands each
line over still encoded (`XSpaceLines`). Each line's events are then decoded straight from
its wire bytes into numpy columns by the compiled decoder when it was built, or else by the
pure-numpy decoder (`wire_numpy`), which gives identical columns. The compiled walk codes the
line's regular stats densely as it goes (`_wire.decode_line_dense`: no row per stat is ever
written; dense_stats.py), or, for a line it declines, walks rows (`_wire.decode_line`) that
`dense_stats.densify` codes. No Python code runs per event on any path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from google.protobuf.message import DecodeError

from tb_profile_plugin import column_threads
from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.request_budget import checkpoint
from tb_profile_plugin.xspace import wire_numpy
from tb_profile_plugin.xspace.dense_stats import (
    densify,
    densify_walked,
    gather_strings,
    walk_line_dense,
)
from tb_profile_plugin.xspace.file_fields import (
    FileBytes,
    RangeSource,
    fields_of,
    pure_path,
    records_of,
    sampled_stats_per_event,
    scan,
)
from tb_profile_plugin.xspace.line_budget import (
    LARGE_LINES_IN_FLIGHT_BYTES,
    LineBudget,
)
from tb_profile_plugin.xspace.model import (
    EventColumns,
    EventMetadataTable,
    Line,
    Plane,
    Profile,
    StatColumns,
    StatMetadataTable,
    StringTable,
)
from tb_profile_plugin.xspace.pb import xplane_pb2, xplane_wire_pb2
from tb_profile_plugin.xspace.schema import DEVICE_PLANE_PREFIX, PLANES_READ_BY_NAME
from tb_profile_plugin.xspace.stats_later import Reopen, StatsLater, Walked

try:
    from tb_profile_plugin.xspace import _wire  # type: ignore[attr-defined]
except ImportError:  # no compiler at install time: the numpy path does the same work
    _wire = None

#: The most lines a profile may hold (`max_lines`); real captures hold hundreds to thousands.
MAX_LINES_ENV = "TB_PROFILE_MAX_LINES"
DEFAULT_MAX_LINES = 100_000
#: Every event starts and ends within this many ps of the profile's origin (2**58 ps, about
#: 3.3 days): twice as far still fits int64 with room for sums, so no time column can wrap.
MAX_SPAN_PS = 2**58



def compiled_decoder_available() -> bool:
    return _wire is not None


def decode_xspace(data: bytes | RangeSource, *, pure: bool | None = None,
                  stats_later: Reopen | None = None) -> Profile:
    """Decode one serialized XSpace. Raises UnreadableProfile for anything that is not one.

    `pure` forces (True) or forbids (False) the numpy decoder; None picks the compiled one when
    built, unless TB_PROFILE_PURE_DECODER=1. Lines are decoded from slices of `data` itself
    (no copy), or read from the file a plane and a line at a time (`RangeSource`); only the
    small rest of each plane goes through protobuf.

    With `stats_later` (and the compiled decoder), the lines' events are walked without their
    stats, which are walked from the file `stats_later()` gives when first used
    (xspace/stats_later.py).
    """
    pure = pure_path(pure)
    events_only = stats_later is not None and not pure
    source = FileBytes(data)
    with _unreadable_wire():
        head, plane_spans = _structure(source, pure)
        checkpoint()
        heads, line_spans = _plane_heads(source, plane_spans, pure)
        checkpoint()
        decoded = _decode_planes(source, heads, line_spans, pure, events_only)
    del source
    starts = [raw.timestamp_ns for _, lines in decoded for raw in lines if len(raw.metadata_id)]
    origin_ns = min(starts) if starts else 0
    _check_times(decoded, origin_ns)
    checkpoint()
    later = None
    if events_only:
        assert stats_later is not None
        later = _stats_later(stats_later, heads, line_spans)
        for raw, stats in zip((raw for _, lines in decoded for raw in lines), later.stats(),
                              strict=True):
            raw.dense_stats = stats
    planes = [_build_plane(plane, lines, origin_ns) for plane, lines in decoded]
    if later is not None:
        for k, (raw, line) in enumerate(zip(
                (raw for _, lines in decoded for raw in lines),
                (line for plane in planes for line in plane.lines), strict=True)):
            later.hold(k, line.events, (raw.timestamp_ns - origin_ns) * 1000)
    return Profile(
        planes=planes,
        hostnames=list(head.hostnames),
        errors=list(head.errors),
        warnings=list(head.warnings),
        origin_ns=origin_ns,
        decoder="numpy" if pure else "compiled",
    )


@dataclass(frozen=True)
class Outline:
    """What an XSpace holds besides its events (`outline_xspace`)."""

    hostnames: list[str]
    errors: list[str]
    warnings: list[str]
    planes: list[xplane_pb2.XPlane]  # each without its lines: names, metadata, stats
    num_events: int


def outline_xspace(data: bytes | RangeSource, *, pure: bool | None = None) -> Outline:
    """The XSpace's planes (metadata tables, no lines), errors, warnings and event count, for
    the facts a server needs of a host (analysis/hosts/host_facts.py) at a fraction of a decode:
    each line's events are counted from its top-level fields, never decoded (no event
    columns). The same structural checks as `decode_xspace`; what an event itself holds is
    left for the decode."""
    pure = pure_path(pure)
    source = FileBytes(data)
    with _unreadable_wire():
        head, plane_spans = _structure(source, pure)
        planes, line_spans = _plane_heads(source, plane_spans, pure)
        num_events = 0
        for spans in line_spans:
            checkpoint()
            for lo, hi in spans:
                num_events += _count_events(scan(source.read(lo, hi), 0, hi - lo, pure))
    return Outline(list(head.hostnames), list(head.errors), list(head.warnings), planes,
                   num_events)


def _count_events(line_fields: np.ndarray) -> int:
    """Events of a line from its top-level fields (`events` is field 4, length-delimited)."""
    return int(np.count_nonzero((line_fields[:, 0] == 4) & (line_fields[:, 1] == 2)))


@contextlib.contextmanager
def _unreadable_wire() -> Iterator[None]:
    """Wire errors (a cut or foreign file) as UnreadableProfile."""
    try:
        yield
    except (ValueError, DecodeError) as exc:
        raise UnreadableProfile(
            f"not a readable XSpace ({exc}); the file is truncated or is not an .xplane.pb"
        ) from exc


def _structure(source: FileBytes, pure: bool
               ) -> tuple[xplane_pb2.XSpace, list[tuple[int, int]]]:
    """The XSpace without its planes, and each plane's (start, end) in the file, after the
    checks that refuse what no profiler writes."""
    if not source.size:
        raise UnreadableProfile("the file is empty (0 bytes): the capture did not finish writing")
    fields = fields_of(source, 0, source.size, pure)
    if np.any(fields[:, 0] > 4) or np.any(fields[:, 1] != 2):
        raise UnreadableProfile(
            "the file is protobuf but not an XSpace (unexpected fields): it is not an "
            ".xplane.pb written by a profiler"
        )
    is_plane = fields[:, 0] == 1
    head = xplane_pb2.XSpace.FromString(records_of(source, fields[~is_plane]))
    planes = [(int(r[3]), int(r[4])) for r in fields[is_plane]]
    if len(planes) > max_lines():
        raise UnreadableProfile(
            f"the file holds {len(planes):,} planes; at most "
            f"{max_lines():,} are read ({MAX_LINES_ENV} raises the limit): it is not a "
            "profile a profiler writes")
    return head, planes


#: Stats per event from which a line walked as rows has them coded densely (`_decode_line`):
#: a TensorFlow host thread's events carry 0.5-1.5 (coding them saved ~7 bytes an event and
#: cost 40% of the decode); a GPU stream's 5-13, a JAX launch thread's 2-4.
MIN_DENSE_STATS_PER_EVENT = 2

def _plane_heads(source: FileBytes, plane_spans: list[tuple[int, int]], pure: bool
                 ) -> tuple[list[xplane_pb2.XPlane], list[list[tuple[int, int]]]]:
    """Each plane's message without its lines, and its lines' (start, end) in the file: read
    by ranges, a plane's lines are found from their headers and never read here."""
    heads: list[xplane_pb2.XPlane] = []
    spans: list[list[tuple[int, int]]] = []
    line_count = 0
    for start, end in plane_spans:
        fields = fields_of(source, start, end, pure)
        is_line = (fields[:, 0] == 3) & (fields[:, 1] == 2)
        heads.append(_plane_head(source, fields, is_line))
        spans.append([(int(r[3]), int(r[4])) for r in fields[is_line]])
        line_count += len(spans[-1])
        _check_line_count(line_count)
    return heads, spans


def max_lines() -> int:
    """The most lines (threads, streams) a profile may hold: TB_PROFILE_MAX_LINES, default
    `DEFAULT_MAX_LINES`. Decoding costs per line, so a file of a million empty lines would
    otherwise take minutes and gigabytes."""
    text = os.environ.get(MAX_LINES_ENV, "")
    return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_MAX_LINES


def _check_line_count(count: int) -> None:
    limit = max_lines()
    if count > limit:
        raise UnreadableProfile(
            f"the file holds {count:,} lines (threads and streams); at most {limit:,} are "
            f"read ({MAX_LINES_ENV} raises the limit): it is not a profile a profiler writes")


def _decode_planes(
    source: FileBytes, heads: list[xplane_pb2.XPlane], line_spans: list[list[tuple[int, int]]],
    pure: bool, events_only: bool = False,
) -> list[tuple[xplane_pb2.XPlane, list[_RawLine]]]:
    """Each plane's head and its lines' columns; the lines of every plane are walked side by
    side on a few threads (column_threads.py: the compiled walk releases the GIL), each into
    its own columns, each from its own range of the file (`events_only`: their events alone,
    `_decode_line_events`)."""
    spans = [span for plane in line_spans for span in plane]
    size = sum(hi - lo for lo, hi in spans)
    budget = LineBudget(LARGE_LINES_IN_FLIGHT_BYTES)

    on_device = {span: head.name.startswith(DEVICE_PLANE_PREFIX)
                 for head, plane in zip(heads, line_spans, strict=True) for span in plane}

    def decode(span: tuple[int, int]) -> _RawLine:
        return _walked(source, budget, span, pure, on_device[span], events_only)

    # The largest lines first, so that the threads finish together (in file order the 8-GPU
    # 10M capture's last 117 MB stream was walked alone: 1.62 s where 1.49 s would do); the
    # results in file order. (The numpy walk holds the GIL: one thread.)
    order = sorted(range(len(spans)), key=lambda k: spans[k][0] - spans[k][1])
    walked = column_threads.map_lines(decode, [spans[k] for k in order], 0 if pure else size)
    lines: list[_RawLine] = [walked[0]] * len(spans) if walked else []
    for k, line in zip(order, walked, strict=True):
        lines[k] = line
    del walked
    decoded, at = [], 0
    for head, plane in zip(heads, line_spans, strict=True):
        decoded.append((head, lines[at : at + len(plane)]))
        at += len(plane)
    return decoded


def _plane_head(source: FileBytes, fields: np.ndarray, is_line: np.ndarray) -> xplane_pb2.XPlane:
    """The plane's message without its lines (protobuf parses that small rest); a plane of
    `PLANES_READ_BY_NAME` with its id and name alone."""
    named = xplane_pb2.XPlane.FromString(records_of(source, fields[fields[:, 0] <= 2]))
    if named.name in PLANES_READ_BY_NAME:
        return named
    plane = xplane_pb2.XPlane.FromString(records_of(source, fields[~is_line]))
    _reject_unknown_fields(plane)
    return plane


def _reject_unknown_fields(plane: xplane_pb2.XPlane) -> None:
    """Protobuf accepts many foreign byte strings as messages full of unknown fields."""
    from google.protobuf import unknown_fields

    if len(unknown_fields.UnknownFieldSet(plane)):
        raise UnreadableProfile(
            "the file parses as protobuf but not as an XSpace (unknown plane fields): it is "
            "not an .xplane.pb written by a profiler"
        )


class _RawLine:
    """One line's header and columns as the decoders return them (strings still in `buf`)."""

    id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    duration_ps: int
    metadata_id: np.ndarray
    offset_ps: np.ndarray
    event_duration_ps: np.ndarray
    num_occurrences: np.ndarray | None
    stats: wire_numpy.StatArrays
    buf: np.ndarray
    dense_stats: StatColumns  # the line's stats, made of `stats` and `buf` (dense_stats.py)


def _decode_line(read: Callable[[], memoryview], pure: bool, on_device: bool = True
                 ) -> _RawLine:
    """The line whose bytes `read` gives, walked into columns: a device line by the compiled
    walk straight into dense stats where it does the line (`_decode_line_dense`), else into a
    row per stat first, then coded densely (a host thread's only where its events carry
    `MIN_DENSE_STATS_PER_EVENT` stats or more in its first events,
    `sampled_stats_per_event`: the same rule on every path, so every path gives the same
    columns). The bytes are held (here alone) until its string values are copied out; on the
    rows' way, not while its stats are coded."""
    raw = _RawLine()
    line_bytes = read()
    rows_only = not on_device and sampled_stats_per_event(
        line_bytes, pure) < MIN_DENSE_STATS_PER_EVENT
    if not pure and not rows_only and _decode_line_dense(line_bytes, raw):
        return raw
    try:
        if pure:
            _decode_line_numpy(line_bytes, raw)
        else:
            _decode_line_compiled(line_bytes, raw)
    except (ValueError, DecodeError) as exc:
        raise UnreadableProfile(f"a line of the profile is malformed ({exc})") from exc
    # Narrowed as each line is walked: the walk's int64 id columns are a line's temporaries,
    # never those of every line at once (the file's bytes are still held then). The compiled
    # walk hands its columns over narrowed already (no copy here then).
    raw.metadata_id = _narrowed_ids(raw.metadata_id)
    row, stat_ids, kind, value, length = raw.stats
    del raw.stats  # (each wide column is dropped as soon as its narrow copy is made)
    stat_ids = _narrowed_ids(stat_ids)
    length = _narrowed_lengths(length)
    sparse = _stat_columns(raw.buf, (row, stat_ids, kind, value, length))
    del row, stat_ids, kind, value, length, raw.buf, line_bytes
    # Dense as each line is walked too: its sparse rows (18 bytes a stat) are one line's
    # temporaries, never every line's at once.
    if rows_only:
        raw.dense_stats = sparse  # (a host thread's 0.5-1.5 stats an event: rows cost little)
    else:
        raw.dense_stats = densify(sparse, len(raw.metadata_id), pure=pure)
    return raw


def _walked(source: FileBytes, budget: LineBudget, span: tuple[int, int], pure: bool,
            on_device: bool, events_only: bool = False) -> _RawLine:
    """The line at `span` of the file walked (`events_only`: its events alone), a large one
    once `budget` admits it, read into the budget's memory (the large walks are the peak)."""
    lo, hi = span
    with budget.walking(hi - lo, source.ranges is not None) as memory:
        if events_only:
            return _decode_line_events(source.read_into(lo, hi, memory))
        return _decode_line(lambda: source.read_into(lo, hi, memory), pure, on_device)


def _decode_line_events(line_bytes: memoryview) -> _RawLine:
    """The line's header and events, its stats passed over (the compiled walk's events-only
    mode: `decode_xspace(stats_later=...)`)."""
    raw = _RawLine()
    try:
        _decode_line_compiled(line_bytes, raw, events_only=True)
    except ValueError as exc:
        raise UnreadableProfile(f"a line of the profile is malformed ({exc})") from exc
    return raw


def _stats_later(reopen: Reopen, heads: list[xplane_pb2.XPlane],
                 line_spans: list[list[tuple[int, int]]]) -> StatsLater:
    """The lines' stats, walked from the reopened file when first used: each line whole again,
    by the decode's own walk (`_decode_line`), so they are the stats a whole decode gives."""
    spans = [span for plane in line_spans for span in plane]
    on_device = [head.name.startswith(DEVICE_PLANE_PREFIX)
                 for head, plane in zip(heads, line_spans, strict=True) for _ in plane]

    def walker(data: bytes | RangeSource) -> Callable[[int], Walked]:
        source = FileBytes(data)
        budget = LineBudget(LARGE_LINES_IN_FLIGHT_BYTES)

        def walk(k: int) -> Walked:
            with _unreadable_wire():
                raw = _walked(source, budget, spans[k], False, on_device[k])
            return raw.metadata_id, raw.offset_ps, raw.event_duration_ps, raw.dense_stats

        return walk

    return StatsLater(reopen, walker, [hi - lo for lo, hi in spans])


def _gathered(stats: StatColumns) -> StatColumns:
    """Sparse `stats` whose string values still point into the line's bytes (`strings`) with
    those values copied out into their own blob (`gather_strings`), as `_stat_columns` gives
    them; the line's bytes are not held by the result."""
    value, blob = gather_strings(stats.strings, stats.kind, stats.value, stats.length)
    return dataclasses.replace(stats, value=value, strings=blob)


def _decode_line_dense(line_bytes: memoryview, raw: _RawLine) -> bool:
    """The line walked by the compiled walk straight into its dense stats
    (`dense_stats.walk_line_dense`): no column per stat row, only those that stay sparse
    (an 8-GPU capture's kernel line: 13M rows of 18 bytes, held with the line's bytes, were
    the decode's peak). The same columns as `_decode_line_compiled` and `densify` give; False
    (nothing set) for a line that walk leaves to them."""
    walked = walk_line_dense(line_bytes)
    if walked is None:
        return False
    (line_id, display_id, name, display_name, timestamp_ns, duration_ps, meta, offset,
     duration, occurrences, meta_size, stat_rows, plan) = walked
    metadata_id = np.frombuffer(meta, _ID_DTYPES[meta_size])
    if plan is None:  # no stats: `_stat_columns` of empty columns
        stats = StatColumns(np.zeros(0, np.int32), np.zeros(0, np.int64),
                            np.zeros(0, np.uint8), np.zeros(0, np.int64),
                            np.zeros(0, np.int32), np.zeros(0, np.uint8))
    else:
        *planned, k_row, k_meta, k_kind, k_value, k_length, length_size = plan
        kept = StatColumns(np.frombuffer(k_row, np.int32), np.frombuffer(k_meta, np.int32),
                           np.frombuffer(k_kind, np.uint8), np.frombuffer(k_value, np.int64),
                           np.frombuffer(k_length, _LENGTH_DTYPES[length_size]),
                           np.frombuffer(line_bytes, np.uint8))  # (strings in the bytes)
        coded = densify_walked(kept, len(metadata_id), tuple(planned))
        if coded is None:
            return False
        stats = coded if len(coded.dense_ids) else _gathered(coded)
    raw.id, raw.display_id, raw.timestamp_ns, raw.duration_ps = (
        line_id, display_id, timestamp_ns, duration_ps)
    raw.name = name.decode("utf-8", errors="replace")
    raw.display_name = display_name.decode("utf-8", errors="replace")
    raw.metadata_id = metadata_id
    raw.offset_ps = np.frombuffer(offset, np.int64)
    raw.event_duration_ps = np.frombuffer(duration, np.int64)
    raw.num_occurrences = None if occurrences is None else np.frombuffer(occurrences, np.int64)
    raw.dense_stats = stats
    return True


def _narrowed_lengths(length: np.ndarray) -> np.ndarray:
    """A line's stat value lengths (bytes of str/bytes values, 0 for the others) as uint8 or
    uint16 where every one fits: real values are short (a GPU kernel's `context_id`: 1-3
    bytes), and the column has a row per stat (11 per event of an 8-GPU JAX capture: 3 bytes
    a stat, 34 bytes an event, kept for the profile's life). Readers widen before they add."""
    if len(length) == 0:
        return length
    longest = int(length.max())
    for narrow in (np.uint8, np.uint16):
        if longest <= np.iinfo(narrow).max:
            return length.astype(narrow, copy=False)  # (the compiled walk's: as it is)
    return length


def _decode_line_compiled(line_bytes: memoryview, raw: _RawLine,
                          events_only: bool = False) -> None:
    """The line walked by the compiled walk into its event columns and stat rows (no stat
    row with `events_only`: `raw.stats` is not set)."""
    (raw.id, raw.display_id, name, display_name, raw.timestamp_ns, raw.duration_ps, meta,
     offset, duration, occurrences, s_row, s_meta, s_kind, s_value, s_length, meta_size,
     s_meta_size, s_length_size) = _wire.decode_line(line_bytes, events_only)
    raw.name = name.decode("utf-8", errors="replace")
    raw.display_name = display_name.decode("utf-8", errors="replace")
    # (ids and lengths come narrowed as `_narrowed_ids` / `_narrowed_lengths` narrow them)
    raw.metadata_id = np.frombuffer(meta, _ID_DTYPES[meta_size])
    raw.offset_ps = np.frombuffer(offset, np.int64)
    raw.event_duration_ps = np.frombuffer(duration, np.int64)
    raw.num_occurrences = None if occurrences is None else np.frombuffer(occurrences, np.int64)
    if events_only:
        return
    raw.stats = (
        np.frombuffer(s_row, np.int32), np.frombuffer(s_meta, _ID_DTYPES[s_meta_size]),
        np.frombuffer(s_kind, np.uint8), np.frombuffer(s_value, np.int64),
        np.frombuffer(s_length, _LENGTH_DTYPES[s_length_size]),
    )
    raw.buf = np.frombuffer(line_bytes, np.uint8)


#: The compiled walk's id and length columns by their entry width in bytes.
_ID_DTYPES = {4: np.int32, 8: np.int64}
_LENGTH_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.int32}


def _decode_line_numpy(line_bytes: memoryview, raw: _RawLine) -> None:
    line = xplane_wire_pb2.XLineWire.FromString(line_bytes)
    raw.id, raw.display_id = line.id, line.display_id
    raw.name, raw.display_name = line.name, line.display_name
    raw.timestamp_ns, raw.duration_ps = line.timestamp_ns, line.duration_ps
    events = list(line.events)
    lengths = np.fromiter(map(len, events), np.int64, count=len(events))
    ends = np.cumsum(lengths)
    buf = np.frombuffer(b"".join(events), np.uint8)
    (raw.metadata_id, raw.offset_ps, raw.event_duration_ps, raw.num_occurrences,
     raw.stats) = wire_numpy.decode_events(buf, ends - lengths, ends)
    raw.buf = buf


def _stat_columns(buf: np.ndarray, stats: wire_numpy.StatArrays) -> StatColumns:
    row, meta, kind, value, length = stats
    value, blob = gather_strings(buf, kind, value, length)
    return StatColumns(row, meta, kind, value, length, blob)


def _check_times(decoded: list[tuple[xplane_pb2.XPlane, list[_RawLine]]], origin_ns: int) -> None:
    """UnreadableProfile unless every event has a duration >= 0 and starts and ends within
    `MAX_SPAN_PS` of the origin (line timestamps far apart, or huge offsets and durations,
    would wrap the int64 time columns). A few reductions per line; no loop per event."""
    limit_days = MAX_SPAN_PS / 1e12 / 86_400
    for plane, lines in decoded:
        for raw in lines:
            if not len(raw.metadata_id):
                continue
            where = f"line {raw.display_name or raw.name or raw.id!r} of plane {plane.name!r}"
            if int(raw.event_duration_ps.min()) < 0:
                raise UnreadableProfile(
                    f"{where} has events of negative duration "
                    f"({int(raw.event_duration_ps.min()):,} ps): the file is corrupt or was "
                    "not written by a profiler")
            shift_ps = (raw.timestamp_ns - origin_ns) * 1000
            first_ps = shift_ps + int(raw.offset_ps.min())
            longest_ps = int(raw.event_duration_ps.max())
            last_offset_ps = int(raw.offset_ps.max())
            if max(shift_ps, abs(first_ps), abs(shift_ps + last_offset_ps),
                   longest_ps) <= MAX_SPAN_PS:
                # offsets <= MAX_SPAN_PS (shift >= 0) and durations too: the sum cannot wrap
                last_ps = shift_ps + _max_sum(raw.offset_ps, raw.event_duration_ps)
            else:
                last_ps = MAX_SPAN_PS + 1
            if first_ps < -MAX_SPAN_PS or last_ps > MAX_SPAN_PS:
                raise UnreadableProfile(
                    f"{where} has events more than {limit_days:.1f} days from the start of the "
                    "profile (line timestamps far apart, or huge offsets or durations): the "
                    "file is corrupt or was not written by a profiler")


#: Elements summed at a time by `_max_sum`: 8 MiB of int64, reused (a 20M-event line's whole
#: sum would be 160 MB of fresh pages, 0.5 s of page faults on a VM).
_SUM_CHUNK = 1 << 20


def _max_sum(a: np.ndarray, b: np.ndarray) -> int:
    """max(a + b) over two int64 columns, summed a chunk at a time into one reused buffer."""
    if len(a) <= _SUM_CHUNK:
        return int((a + b).max())
    buffer = np.empty(_SUM_CHUNK, np.int64)
    best = np.iinfo(np.int64).min
    for lo in range(0, len(a), _SUM_CHUNK):
        hi = min(lo + _SUM_CHUNK, len(a))
        part = buffer[: hi - lo]
        np.add(a[lo:hi], b[lo:hi], out=part)
        best = max(best, int(part.max()))
    return best


def _narrowed_ids(metadata_id: np.ndarray) -> np.ndarray:
    """A line's event (or stat) metadata ids as int32 where every one fits (real ids are
    small: 4 bytes per event and per stat less, kept for the profile's life), else as they are
    (int64)."""
    if len(metadata_id) == 0 or metadata_id.dtype == np.int32:
        return metadata_id
    limits = np.iinfo(np.int32)
    if int(metadata_id.min()) < limits.min or int(metadata_id.max()) > limits.max:
        return metadata_id
    return metadata_id.astype(np.int32)


def _build_line(raw: _RawLine, origin_ns: int) -> Line:
    start_ps = raw.offset_ps
    if len(start_ps):  # an empty line's timestamp is never used (and may be far away)
        # in place: offsets become starts from the profile origin (`_check_times`: no wrap)
        start_ps += np.int64((raw.timestamp_ns - origin_ns) * 1000)
    return Line(
        id=raw.id,
        display_id=raw.display_id,
        name=raw.name,
        display_name=raw.display_name,
        timestamp_ns=raw.timestamp_ns,
        duration_ps=raw.duration_ps,
        events=EventColumns(raw.metadata_id, start_ps, raw.event_duration_ps,
                            raw.num_occurrences),
        stats=raw.dense_stats,
    )


def _message_stats(owners_and_stats: list[tuple[int, list[xplane_pb2.XStat]]]) -> StatColumns:
    """StatColumns of stats held as protobuf objects (metadata and plane stats: few rows)."""
    flat = [(row, stat) for row, stats in owners_and_stats for stat in stats]
    if not flat:
        return StatColumns.empty()
    encoded = [stat.SerializeToString() for _, stat in flat]
    lengths = np.array([len(e) for e in encoded], np.int64)
    ends = np.cumsum(lengths)
    buf = np.frombuffer(b"".join(encoded), np.uint8)
    rows = np.array([row for row, _ in flat], np.int32)
    return _stat_columns(buf, wire_numpy.decode_stats(buf, ends - lengths, ends, rows))


def _build_plane(
    plane: xplane_pb2.XPlane, raw_lines: list[_RawLine], origin_ns: int
) -> Plane:
    event_ids = sorted(plane.event_metadata.keys())
    entries = [plane.event_metadata[i] for i in event_ids]
    child_counts = [len(e.child_id) for e in entries]
    child_offsets = np.zeros(len(entries) + 1, np.int64)
    np.cumsum(child_counts, out=child_offsets[1:])
    event_metadata = EventMetadataTable(
        ids=np.array(event_ids, np.int64),
        names=StringTable.from_strings([e.name for e in entries]),
        display_names=StringTable.from_strings([e.display_name for e in entries]),
        metadata=StringTable.from_strings([e.metadata for e in entries]),
        stats=_message_stats([(row, list(e.stats)) for row, e in enumerate(entries) if e.stats]),
        child_offsets=child_offsets,
        child_ids=np.array([c for e in entries for c in e.child_id], np.int64),
    )
    stat_ids = sorted(plane.stat_metadata.keys())
    stat_entries = [plane.stat_metadata[i] for i in stat_ids]
    stat_metadata = StatMetadataTable(
        ids=np.array(stat_ids, np.int64),
        names=StringTable.from_strings([s.name for s in stat_entries]),
        descriptions=StringTable.from_strings([s.description for s in stat_entries]),
    )
    return Plane(
        id=plane.id,
        name=plane.name,
        lines=[_build_line(raw, origin_ns) for raw in raw_lines],
        event_metadata=event_metadata,
        stat_metadata=stat_metadata,
        stats=_message_stats([(0, list(plane.stats))]),
    )
