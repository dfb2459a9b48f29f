"""The events' fields as numpy columns, and every `args` entry as a stat row (`StatRows`);
nothing per event is kept after the decode.

Speed (docs/pytorch.md "Figures"): no Python code runs per event. A field of every event is
read by C loops (`map(dict.get, events, repeat(key))`, `itertools.chain` over the args dicts,
`operator.itemgetter` to pick rows), numbers become columns with `np.array` where their types
allow it, and whatever is derived from a value (a thread's line, a device's number, a
kernel's details) is computed once per distinct value and looked up for the rest.

Kept events: spans (`ph` "X") and instants ("i"/"I", not global) with a numeric `ts`; spans
with a negative `dur` are dropped; a span without `dur` is zero-length. Flows ("s"/"f") are
kept apart (`Flows`); "M" events only name threads. Every drop is counted by reason.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat

import numpy as np
import orjson

from tb_profile_plugin.request_budget import checkpoint
from tb_profile_plugin.xspace.kineto.details import kernel_details
from tb_profile_plugin.xspace.kineto.growing import Growing
from tb_profile_plugin.xspace.producers import pytorch as pt
from tb_profile_plugin.xspace.schema import StatKind

_NONE_TYPE = type(None)
_INT, _FLOAT, _STR, _BOOL, _JSON, _SKIP = range(6)
class _Kinds(dict):
    """A value's type -> its kind; any type not listed is written as JSON text."""

    def __missing__(self, key: type) -> int:
        return _JSON


_KIND_OF = _Kinds({int: _INT, float: _FLOAT, str: _STR, bool: _BOOL, list: _JSON, dict: _JSON,
                   _NONE_TYPE: _SKIP})
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_NUMBER_TYPES = frozenset({int, float})
_JSON_BYTES_CHUNK = 4096  # orjson.dumps results held at once (each holds a few KB)


def field_of(events: Sequence[dict], key: str, default: object = None) -> list:
    """`[e.get(key, default) for e in events]`, looped in C."""
    return list(map(dict.get, events, repeat(key), repeat(default)))


def take(values: Sequence, rows: np.ndarray) -> list:
    """`[values[i] for i in rows]`, looped in C."""
    if len(rows) > 1:
        return list(operator.itemgetter(*rows.tolist())(values))
    return [values[int(rows[0])]] if len(rows) else []


def _hashable_without_bools(values: list) -> bool:
    """Whether a dict can stand for `values` by value: hashable, and no bool (True == 1)."""
    types = set(map(type, values))
    return bool not in types and not types & {list, dict}


def per_distinct(values: list, compute: Callable[[object], int]) -> np.ndarray:
    """int64 `[compute(v) for v in values]`, `compute` called once per distinct value."""
    if not _hashable_without_bools(values):
        return np.fromiter(map(compute, values), np.int64, len(values))
    distinct = dict.fromkeys(values)
    for value in distinct:
        distinct[value] = compute(value)
    return np.fromiter(map(distinct.__getitem__, values), np.int64, len(values))


class Interner:
    """Texts -> dense codes, in first-seen order."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self._seen = _Seen(self)

    def code(self, text: str) -> int:
        return self.codes.setdefault(text, len(self.codes))

    def codes_of(self, texts: Sequence) -> np.ndarray:
        """The codes of `texts` (new texts get the next codes): one C loop of dict look-ups
        (`_Seen`: Python runs only for a text not seen before); a value that is no text (a
        number, a list) is first turned into one."""
        try:
            return np.fromiter(map(self._seen.__getitem__, texts), np.int64, len(texts))
        except TypeError:  # (unhashable or not a string: rare, slow path)
            texts = [t if t.__class__ is str else _text(t) for t in texts]
            for text in dict.fromkeys(texts):
                self.codes.setdefault(text, len(self.codes))
        return np.fromiter(map(self.codes.__getitem__, texts), np.int64, len(texts))

    @property
    def texts(self) -> list[str]:
        return list(self.codes)

    def among(self, codes: np.ndarray, texts: Container[str]) -> np.ndarray:
        """bool: whether each of `codes` stands for one of `texts`."""
        return np.isin(codes, [k for k, t in enumerate(self.codes) if t in texts])


class _Seen(dict):
    """An Interner's texts already looked up -> their codes; a new text gets its code from
    the Interner (first-seen order). Anything but a `str` is refused (TypeError: the caller's
    slow path turns it into its text first)."""

    def __init__(self, owner: Interner) -> None:
        super().__init__()
        self.owner = owner

    def __missing__(self, text: object) -> int:
        if text.__class__ is not str:
            raise TypeError
        code = self.owner.code(text)  # type: ignore[arg-type]
        self[text] = code
        return code


def _text(value: object) -> str:
    if value is None:
        return ""
    if value.__class__ is str:
        return value  # type: ignore[return-value]
    return orjson.dumps(value).decode() if isinstance(value, list | dict) else str(value)


def number_of(value: object) -> int | None:
    """An id as written: an int, an integral float, or a string's trailing digits
    (2021's `"tid": "stream 7"`); None otherwise."""
    if value.__class__ is int:
        return value  # type: ignore[return-value]
    if value.__class__ is float and math.isfinite(value) and value == int(value):  # type: ignore[arg-type]
        return int(value)  # type: ignore[arg-type]
    if value.__class__ is str:
        digits = len(value) - len(value.rstrip("0123456789"))  # type: ignore[attr-defined]
        if digits:
            return int(value[-digits:])  # type: ignore[index]
    return None


def floats(values: Sequence) -> np.ndarray:
    """float64 column of numbers (NaN for anything else, bools included)."""
    if set(map(type, values)) <= _NUMBER_TYPES:
        try:
            return np.array(values, np.float64)
        except OverflowError:  # an int past float64: the slow path's float() says so too
            pass
    return np.fromiter((v if v.__class__ is float or v.__class__ is int else math.nan
                        for v in values), np.float64, len(values))


@dataclass
class Flows:
    """fwdbwd flow points: `ph` "s" (start) or "f" (finish), the thread and time, the id."""

    is_start: np.ndarray  # bool
    pid: list
    tid: list
    ts_us: np.ndarray  # float64
    flow_id: np.ndarray  # int64


@dataclass
class Fields:
    """The kept events, in file order, as columns; what a decode needs of their `args`
    dicts beyond the stat rows (a kernel's details text) is read while each slice's dicts
    exist, so none is kept."""

    name: np.ndarray  # int64 codes into `names`
    cat: np.ndarray  # int64 codes into `cats`
    instant: np.ndarray  # bool
    ts_us: np.ndarray  # float64
    dur_us: np.ndarray  # float64
    host_line: np.ndarray  # int64: code of its (pid, tid) in `thread_keys`; -1 on devices
    pid_number: np.ndarray  # int64: a device event's pid as a number (-1: none)
    tid_number: np.ndarray  # int64: a device event's tid as a number (-1: none)
    detail: np.ndarray  # int64: a kernel's details text, code into `details`; -1 none
    names: Interner
    cats: Interner
    details: Interner
    thread_keys: dict[tuple[object, object], int]
    thread_names: dict[tuple[object, object], str]
    flows: Flows
    dropped: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.name)


@dataclass
class _Part:
    """One slice's kept events, still with their pids, tids and args (transient)."""

    name: np.ndarray
    cat: np.ndarray
    instant: np.ndarray
    ts_us: np.ndarray
    dur_us: np.ndarray
    pid: list
    tid: list
    args: list


class _Reader:
    """Reads slices of `traceEvents` one after the other into one `Fields` and `StatRows`
    (texts interned across slices, event indices running on)."""

    def __init__(self, stat_names: Interner) -> None:
        self.stat_names = stat_names
        self.names, self.cats, self.details = Interner(), Interner(), Interner()
        self.thread_keys: dict[tuple[object, object], int] = {}
        self.thread_names: dict[tuple[object, object], str] = {}
        self.dropped: dict[str, int] = {}
        self.columns = {key: Growing(dtype) for key, dtype in _COLUMN_TYPES.items()}
        self.flows: list[Flows] = []
        self.rows = _GrowingRows()
        self.count = 0

    def drop(self, reason: str, count: int) -> None:
        if count:
            self.dropped[reason] = self.dropped.get(reason, 0) + count

    def add(self, events: list) -> None:
        part = self._part(events)
        del events
        n = len(part.name)
        device = self.cats.among(part.cat, pt.DEVICE_CATEGORIES)
        kernel = self.cats.among(part.cat, pt.KERNEL_CATEGORIES)
        host_line = np.full(n, -1, np.int64)
        host_rows = np.flatnonzero(~device)
        host_line[host_rows] = self._thread_codes(take(part.pid, host_rows),
                                                  take(part.tid, host_rows))
        pid_number = np.full(n, -1, np.int64)
        tid_number = np.full(n, -1, np.int64)
        device_rows = np.flatnonzero(device)
        for column, values in ((pid_number, part.pid), (tid_number, part.tid)):
            column[device_rows] = per_distinct(take(values, device_rows), _number_or_minus_one)
        detail = np.full(n, -1, np.int64)
        kernels = np.flatnonzero(kernel)
        detail[kernels] = self.details.codes_of(kernel_details(take(part.args, kernels)))
        stats = args_stats(part.args, self.stat_names)
        part.args = part.pid = part.tid = []
        stats.event += self.count
        self.rows.extend(stats)
        del stats
        for key, value in (("name", part.name), ("cat", part.cat), ("instant", part.instant),
                           ("ts_us", part.ts_us), ("dur_us", part.dur_us),
                           ("host_line", host_line), ("pid_number", pid_number),
                           ("tid_number", tid_number), ("detail", detail)):
            self.columns[key].extend(value)
        self.count += n

    def _thread_codes(self, pids: list, tids: list) -> np.ndarray:
        """Each host event's line: the code of its (pid, tid) in `thread_keys`, new threads
        numbered in first-seen order (`_key` once per distinct pair)."""
        keys = self.thread_keys
        pairs = list(zip(pids, tids, strict=True))
        if not (_hashable_without_bools(pids) and _hashable_without_bools(tids)):
            return np.fromiter((keys.setdefault((_key(p), _key(t)), len(keys)) for p, t in pairs),
                               np.int64, len(pairs))
        distinct = dict.fromkeys(pairs)
        for pair in distinct:
            distinct[pair] = keys.setdefault((_key(pair[0]), _key(pair[1])), len(keys))
        return np.fromiter(map(distinct.__getitem__, pairs), np.int64, len(pairs))

    def result(self) -> tuple[Fields, StatRows]:
        column = self.columns
        flows = self.flows
        merged = Flows(
            is_start=np.concatenate([f.is_start for f in flows]) if flows else np.zeros(0, bool),
            pid=[p for f in flows for p in f.pid], tid=[t for f in flows for t in f.tid],
            ts_us=np.concatenate([f.ts_us for f in flows]) if flows else np.zeros(0),
            flow_id=(np.concatenate([f.flow_id for f in flows]) if flows
                     else np.zeros(0, np.int64)))
        fields = Fields(
            name=column["name"].result(), cat=column["cat"].result(),
            instant=column["instant"].result(), ts_us=column["ts_us"].result(),
            dur_us=column["dur_us"].result(), host_line=column["host_line"].result(),
            pid_number=column["pid_number"].result(),
            tid_number=column["tid_number"].result(), detail=column["detail"].result(),
            names=self.names, cats=self.cats, details=self.details,
            thread_keys=self.thread_keys, thread_names=self.thread_names, flows=merged,
            dropped=self.dropped)
        return fields, self.rows.result()

    def _part(self, events: list) -> _Part:
        n_all = len(events)
        if set(map(type, events)) != {dict}:
            events = [e for e in events if e.__class__ is dict]
        self.drop("entries of traceEvents that are not objects", n_all - len(events))
        phases = Interner()
        ph = phases.codes_of(field_of(events, pt.PH))
        ph_text = phases.texts
        span_code = ph_text.index(pt.SPAN_PHASE) if pt.SPAN_PHASE in ph_text else -1
        instant_codes = [k for k, t in enumerate(ph_text) if t in pt.INSTANT_PHASES]
        flow_codes = [k for k, t in enumerate(ph_text)
                      if t in (pt.FLOW_START_PHASE, pt.FLOW_END_PHASE)]
        meta_code = ph_text.index(pt.METADATA_PHASE) if pt.METADATA_PHASE in ph_text else -1
        for k, t in enumerate(ph_text):
            if (k not in (span_code, meta_code) and k not in instant_codes
                    and k not in flow_codes and t != pt.FLOW_STEP_PHASE):
                self.drop(f"events of phase {t!r}, which are not read",
                          int(np.count_nonzero(ph == k)))
        self.thread_names.update(
            _thread_names([events[i] for i in np.flatnonzero(ph == meta_code).tolist()]))
        self.flows.append(_flows(events, ph, ph_text, flow_codes))
        is_instant = np.isin(ph, instant_codes)
        candidates = np.flatnonzero((ph == span_code) | is_instant)
        picked = take(events, candidates)
        del events
        ts_column, cat_column, name_column, pid_column, tid_column = _columns(
            picked, (pt.TS, pt.CAT, pt.NAME, pt.PID, pt.TID))
        instant = is_instant[candidates]
        # (a scope is an instant's: Chrome's trace format gives spans none)
        global_scope = np.zeros(len(picked), bool)
        instants = np.flatnonzero(instant)
        global_scope[instants] = np.fromiter(
            map(operator.eq, field_of(take(picked, instants), pt.SCOPE),
                repeat(pt.GLOBAL_SCOPE)), bool, len(instants))
        ts = floats(ts_column)
        dur = floats(field_of(picked, pt.DUR, 0))
        args = field_of(picked, pt.ARGS)
        del picked
        dur[instant] = 0.0
        no_ts = ~np.isfinite(ts)
        no_dur = ~instant & ~np.isfinite(dur)
        negative = ~instant & (dur < 0)
        self.drop("events without a numeric ts", int(np.count_nonzero(no_ts)))
        self.drop("spans with a dur that is not a number",
                  int(np.count_nonzero(no_dur & ~no_ts)))
        self.drop("spans of negative duration", int(np.count_nonzero(negative & ~no_ts)))
        cat = self.cats.codes_of(cat_column)
        keep = ~(no_ts | no_dur | negative | global_scope
                 | self.cats.among(cat, pt.TRACE_CATEGORIES))
        if not keep.all():
            rows = np.flatnonzero(keep)
            name_column, pid_column, tid_column, args = (
                take(c, rows) for c in (name_column, pid_column, tid_column, args))
        return _Part(
            name=self.names.codes_of(list(name_column)), cat=cat[keep],
            instant=instant[keep], ts_us=ts[keep], dur_us=np.nan_to_num(dur[keep]),
            pid=list(pid_column), tid=list(tid_column), args=args)


def _columns(events: list, keys: tuple[str, ...]) -> list[Sequence]:
    """`[field_of(events, key) for key in keys]`: read together (one C call per event) where
    every event has every key, else key by key."""
    if not events:
        return [[] for _ in keys]
    try:
        return list(zip(*map(operator.itemgetter(*keys), events), strict=True))
    except KeyError:
        return [field_of(events, key) for key in keys]


def read_fields(slices: Iterable[list], stat_names: Interner) -> tuple[Fields, StatRows]:
    """Columns and stat rows of the kept events of `slices` (lists of parsed `traceEvents`,
    in file order; each dropped once read). A kernel's details text is read from its args
    while they exist (details.py)."""
    reader = _Reader(stat_names)
    for events in slices:
        reader.add(events)
        del events
        checkpoint()
    return reader.result()


_COLUMN_TYPES = {"name": np.int64, "cat": np.int64, "instant": bool, "ts_us": np.float64,
                 "dur_us": np.float64, "host_line": np.int64, "pid_number": np.int64,
                 "tid_number": np.int64, "detail": np.int64}


class _GrowingRows:
    """The slices' stat rows, appended to one set of columns (string offsets moved past the
    blobs before them): held once, never joined from parts."""

    def __init__(self) -> None:
        self.event, self.stat = Growing(np.int32), Growing(np.int32)
        self.kind, self.value = Growing(np.uint8), Growing(np.int64)
        self.length = Growing(np.int32)
        self.blob_parts: list[bytes] = []
        self.blob_size = 0

    def extend(self, part: StatRows) -> None:
        if self.blob_size:
            part.value[part.kind == StatKind.STR] += self.blob_size
        for column, values in ((self.event, part.event), (self.stat, part.stat),
                               (self.kind, part.kind), (self.value, part.value),
                               (self.length, part.length)):
            column.extend(values)
        self.blob_parts.extend(part.blob_parts)
        self.blob_size += part.blob_size

    def result(self) -> StatRows:
        return StatRows(self.event.result(), self.stat.result(), self.kind.result(),
                        self.value.result(), self.length.result(), self.blob_parts,
                        self.blob_size)


def _thread_names(meta: list[dict]) -> dict[tuple[object, object], str]:
    out: dict[tuple[object, object], str] = {}
    for e in meta:  # "M" events: a few per thread
        args = e.get(pt.ARGS)
        if e.get(pt.NAME) == pt.THREAD_NAME_EVENT and isinstance(args, dict):
            label = args.get(pt.META_NAME_ARG)
            if isinstance(label, str) and label:
                out[(_key(e.get(pt.PID)), _key(e.get(pt.TID)))] = label
    return out


def _ints_or_minus_one(values: list) -> np.ndarray:
    """int64 column of the ints among `values` (-1 for anything else, bools included)."""
    if set(map(type, values)) <= {int}:
        try:
            return np.array(values, np.int64).reshape(len(values))
        except OverflowError:
            pass
    return np.fromiter((v if v.__class__ is int and _I64_MIN <= v <= _I64_MAX else -1
                        for v in values), np.int64, len(values))


def _number_or_minus_one(value: object) -> int:
    number = number_of(value)
    return -1 if number is None else number


def _key(value: object) -> object:
    """A pid or tid as a dict key: a string of digits is the number (2021 writes `"4242"` on
    spans and `4242` on instants of one thread); lists and objects as their text."""
    if value.__class__ is str and value.isdigit():  # type: ignore[attr-defined]
        return int(value)  # type: ignore[call-overload]
    return value if value.__class__ in (int, str, float, _NONE_TYPE) else _text(value)


def _flows(events: list, ph: np.ndarray, ph_text: list[str], flow_codes: list[int]) -> Flows:
    flows = take(events, np.flatnonzero(np.isin(ph, flow_codes)))
    fwdbwd = np.fromiter(map(pt.FWDBWD_CATEGORIES.__contains__, field_of(flows, pt.CAT)), bool,
                         len(flows))
    picked = take(flows, np.flatnonzero(fwdbwd))
    del flows
    start_code = ph_text.index(pt.FLOW_START_PHASE) if pt.FLOW_START_PHASE in ph_text else -1
    phase = Interner()
    phase.codes = {t: k for k, t in enumerate(ph_text)}
    codes = phase.codes_of(field_of(picked, pt.PH))
    ids = field_of(picked, pt.FLOW_ID)
    flow_id = _ints_or_minus_one(ids)
    ts = floats(field_of(picked, pt.TS))
    good = (flow_id >= 0) & np.isfinite(ts)
    keep = np.flatnonzero(good).tolist()
    return Flows(is_start=(codes == start_code)[good],
                 pid=[_key(picked[i].get(pt.PID)) for i in keep],
                 tid=[_key(picked[i].get(pt.TID)) for i in keep],
                 ts_us=ts[good], flow_id=flow_id[good])


@dataclass
class StatRows:
    """Stat rows of the events, any order: event, stat name code, kind, raw value (string
    rows: offset into `blob`, with `length`)."""

    event: np.ndarray  # int32 (a trace within the size cap holds fewer than 2^31 events)
    stat: np.ndarray  # int32 codes into the decoder's stat names
    kind: np.ndarray  # uint8 StatKind
    value: np.ndarray  # int64
    length: np.ndarray  # int32
    blob_parts: list[bytes]  # the string blob, in parts (offsets count over their join)
    blob_size: int = 0

    @staticmethod
    def empty() -> StatRows:
        z = np.zeros(0, np.int32)
        return StatRows(z, z, np.zeros(0, np.uint8), np.zeros(0, np.int64), z, [])

    def add(self, event: np.ndarray, stat: int | np.ndarray, kind: int, value: np.ndarray,
            length: np.ndarray | None = None) -> None:
        for name, values in (("event", event), ("stat", stat), ("kind", kind),
                             ("value", value), ("length", 0 if length is None else length)):
            _append(self.__dict__, name, values, len(event))

    def add_ints(self, event: np.ndarray, stat: int, values: np.ndarray) -> None:
        self.add(event, stat, StatKind.INT64, values)

    def add_texts(self, event: np.ndarray, stat: int, codes: np.ndarray, texts: list[str]) -> None:
        """A string stat per event: `texts[codes[i]]` (each distinct text stored once)."""
        if not len(event):
            return
        encoded = [t.encode("utf-8", "replace") for t in texts]
        lengths = np.array([len(b) for b in encoded], np.int64)
        starts = self.blob_size + np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self.blob_parts.append(b"".join(encoded))
        self.blob_size += int(lengths.sum())
        self.add(event, stat, StatKind.STR, starts[codes], lengths[codes])

    def blob(self) -> np.ndarray:
        """The string blob (its parts joined once: held once)."""
        if len(self.blob_parts) != 1:
            self.blob_parts = [b"".join(self.blob_parts)]
        return np.frombuffer(self.blob_parts[0], np.uint8)


def _append(columns: dict, name: str, values: np.ndarray | int, count: int) -> None:
    """`columns[name]` followed by `values` (a scalar: `count` times), in its dtype: grown in
    place where nothing else refers to it (realloc moves a large block's pages without
    copying them: the rows are not held twice while the derived stats are added), else
    joined into a new column."""
    column = columns.pop(name)  # (the only reference left, so that refcheck can pass)
    at = len(column)
    try:
        column.resize(at + count, refcheck=True)
    except ValueError:  # (a view, or referred to elsewhere)
        joined = np.empty(at + count, column.dtype)
        joined[:at] = column
        column = joined
    column[at:] = values
    columns[name] = column


def args_stats(args: list, stat_names: Interner) -> StatRows:
    """Every entry of every event's `args` as a stat row (module doc of the decoder: ints,
    floats, bools as 0/1, strings, lists and objects as JSON text; nulls left out). Keys are
    renamed where XPlane has a name for them (`pt.RENAMED_ARGS`)."""
    if set(map(type, args)) != {dict}:
        args = [a if a.__class__ is dict else {} for a in args]
    sizes = np.fromiter(map(len, args), np.int64, len(args))
    event = np.repeat(np.arange(len(args), dtype=np.int64), sizes)
    del sizes
    raw_keys = Interner()
    raw_code = raw_keys.codes_of(list(chain.from_iterable(args)))
    values = list(chain.from_iterable(map(dict.values, args)))
    del args
    # Renamed per distinct key: `correlation` is XPlane's `correlation_id`.
    renamed = np.array([stat_names.code(pt.RENAMED_ARGS.get(k, k)) for k in raw_keys.texts]
                       + [-1], np.int64)
    stat = renamed[raw_code]
    del raw_code
    kinds = np.fromiter(map(_KIND_OF.__getitem__, map(type, values)), np.uint8, len(values))
    out = StatRows.empty()
    raw = np.zeros(len(values), np.int64)
    kind = np.full(len(values), StatKind.INT64, np.uint8)
    length = np.zeros(len(values), np.int32)
    ints = np.flatnonzero((kinds == _INT) | (kinds == _BOOL))
    int_values = take(values, ints)
    try:
        raw[ints] = np.array(int_values, np.int64) if int_values else 0
    except OverflowError:  # a number past int64: its text
        wide = [i for i, v in zip(ints.tolist(), int_values, strict=True)
                if not _I64_MIN <= v <= _I64_MAX]
        kinds[wide] = _STR
        for i in wide:
            values[i] = str(values[i])
        ints = np.flatnonzero((kinds == _INT) | (kinds == _BOOL))
        raw[ints] = np.array(take(values, ints), np.int64)
    del int_values
    reals = np.flatnonzero(kinds == _FLOAT)
    raw[reals] = np.array(take(values, reals), np.float64).view(np.int64)
    kind[reals] = StatKind.DOUBLE
    # Strings and JSON texts: each kind encoded in one go, their rows pointing into one blob
    # (planes.py gathers each line's strings in row order, so the blob's order is free).
    at = 0
    for code, encode in ((_STR, _encoded_strings), (_JSON, _encoded_json)):
        rows = np.flatnonzero(kinds == code)
        if not len(rows):
            continue
        blob, lengths = encode(take(values, rows))
        raw[rows] = at + np.concatenate([[0], np.cumsum(lengths)[:-1]])
        length[rows] = lengths
        kind[rows] = StatKind.STR
        out.blob_parts.append(blob)
        at += len(blob)
        del blob
    del values
    out.blob_size = at
    kept = kinds != _SKIP
    out.add(event[kept], stat[kept], 0, raw[kept], length[kept])
    out.kind = kind[kept]
    return out


def _encoded_strings(texts: list[str]) -> tuple[bytes, np.ndarray]:
    """The strings as utf-8 (unencodable characters replaced), one after the other, and
    their lengths in bytes."""
    joined = "".join(texts).encode("utf-8", "replace")
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    if len(joined) == int(lengths.sum()):  # all ASCII: characters are bytes
        return joined, lengths
    encoded = [t.encode("utf-8", "replace") for t in texts]
    return b"".join(encoded), np.fromiter(map(len, encoded), np.int64, len(encoded))


_BACKSLASH, _QUOTE, _COMMA = ord("\\"), ord('"'), ord(",")
_OPENS, _CLOSES = (ord("["), ord("{")), (ord("]"), ord("}"))


def _encoded_json(values: list) -> tuple[bytes, np.ndarray]:
    """Lists and objects as compact JSON, one after the other, and their lengths: one
    `orjson.dumps` of them all, cut with numpy at the commas between its elements (outside
    strings, at depth 1). Text with a backslash (an escaped quote could fool the string
    state) is dumped a value at a time instead."""
    if not values:
        return b"", np.zeros(0, np.int64)
    text = orjson.dumps(values)
    b = np.frombuffer(text, np.uint8)
    if (b == _BACKSLASH).any():
        return _encoded_json_each(values)
    in_string = (np.cumsum(b == _QUOTE, dtype=np.int64) & 1).astype(bool)
    step = np.isin(b, _OPENS).astype(np.int8) - np.isin(b, _CLOSES).astype(np.int8)
    step[in_string] = 0
    depth = np.cumsum(step, dtype=np.int64)
    cuts = np.flatnonzero((b == _COMMA) & ~in_string & (depth == 1))
    del in_string, step, depth
    if len(cuts) != len(values) - 1:  # (never seen: the values are lists and objects)
        return _encoded_json_each(values)
    lengths = np.diff(np.concatenate([[0], cuts, [len(b) - 1]])) - 1
    kept = np.ones(len(b), bool)
    kept[[0, -1]] = False
    kept[cuts] = False
    return b[kept].tobytes(), lengths


def _encoded_json_each(values: list) -> tuple[bytes, np.ndarray]:
    """`_encoded_json` a value at a time: a few thousand `orjson.dumps` results at once (each
    holds a buffer of a few KB however short its text: 320,000 held took 1.25 GB)."""
    blob = bytearray()
    lengths = np.zeros(len(values), np.int64)
    for lo in range(0, len(values), _JSON_BYTES_CHUNK):
        parts = list(map(orjson.dumps, values[lo:lo + _JSON_BYTES_CHUNK]))
        lengths[lo:lo + len(parts)] = np.fromiter(map(len, parts), np.int64, len(parts))
        blob += b"".join(parts)
        del parts
    return bytes(blob), lengths


def dense_int(rows: StatRows, stat_codes: list[int], n: int, fill: int = -1) -> np.ndarray:
    """Per event, the (last) integer value of any of the stats `stat_codes`, `fill` where none."""
    out = np.full(n, fill, np.int64)
    for code in stat_codes:
        sel = np.flatnonzero((rows.stat == code) & (rows.kind == StatKind.INT64))
        out[rows.event[sel]] = rows.value[sel]
    return out
