"""A corpus of hostile host files, built from the committed real captures (issue 16).

`build_corpus(logdir, outside)` writes one run per variant,
`<logdir>/<NNN_group_detail>/plugins/profile/2020_01_01_00_00_00/h.xplane.pb`, and returns
the variants. Groups:

- ``trunc``: a real capture cut at many offsets (the first bytes, field boundaries, the end).
- ``flip``: a real capture with one byte changed (seeded, so the corpus is the same every run).
- ``special``: not a regular file: a FIFO, links to /dev/zero, /dev/urandom, /dev/null and
  /proc files, link loops, dangling links, directories and a socket named `*.xplane.pb`, a
  sparse file over the 4 GiB size limit, links and linked session/run directories that lead
  outside the logdir (to `outside`).
- ``struct``: well-formed protobuf with hostile content: line timestamps days apart, negative
  or huge durations and offsets, unknown metadata ids, hostile stats (huge, many, wrong kind),
  huge counts (lines, planes, metadata, identical nested events), huge host names.
- ``multi``: a run of two hosts, a good capture (`good.xplane.pb`) beside a hostile one, for
  the views that combine hosts (ALL_HOSTS).

Each variant says what a reader must answer: `must_refuse` (HTTP 422, CLI exit 4: certainly
not a readable profile), `hidden` (a link leading outside the logdir: never listed, 404, CLI
exit 3, unless links are followed), or anything but an internal error otherwise.

    python -m tests.hostile_corpus OUT_DIR     # writes OUT_DIR/logdir and OUT_DIR/outside
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tb_profile_plugin.xspace.pb import xplane_pb2
from tests.fixtures import DATA_DIR

SESSION = "2020_01_01_00_00_00"
HOST = "h"
#: The real captures the variants are made from (small, CPU and GPU, TF and JAX).
BASES = ("custom_loop", "keras_fit", "tfdata_slow", "jax_gpu_conv")
TRUNCATIONS_PER_BASE = 32
FLIPS_PER_BASE = 24
_DAY_NS = 86_400 * 10**9
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)


@dataclass(frozen=True)
class Variant:
    name: str  # the run's top directory: "<NNN>_<group>_<detail>"
    group: str  # trunc | flip | special | struct
    must_refuse: bool = False  # 422 / exit 4 (when the file is reached)
    hidden: bool = False  # a link leading outside the logdir: not listed unless followed
    follow_ok: bool = False  # readable once links are followed (a real profile outside)

    @property
    def run(self) -> str:
        return f"{self.name}/{SESSION}"

    def session_dir(self, logdir: Path) -> Path:
        return logdir / self.name / "plugins" / "profile" / SESSION

    def host_file(self, logdir: Path) -> Path:
        return self.session_dir(logdir) / f"{HOST}.xplane.pb"


def base_bytes(base: str) -> bytes:
    return next(DATA_DIR.glob(f"{base}/**/*.xplane.pb")).read_bytes()


def _space(data: bytes) -> xplane_pb2.XSpace:
    return xplane_pb2.XSpace.FromString(data)


def _busy_lines(space: xplane_pb2.XSpace) -> list[xplane_pb2.XLine]:
    return [line for plane in space.planes for line in plane.lines if line.events]


def played_again(copies: int) -> Callable[[xplane_pb2.XSpace], None]:
    """A change for `_mutate`: every busy thread played again `copies - 1` times in a row after
    the capture's end (a real capture made longer in time)."""
    def change(space: xplane_pb2.XSpace) -> None:
        for line in _busy_lines(space):
            events = list(line.events)
            span = max(e.offset_ps + e.duration_ps for e in events) + 1
            for copy in range(1, copies):
                for event in events:
                    added = line.events.add()
                    added.CopyFrom(event)
                    added.offset_ps = event.offset_ps + copy * span
    return change


def _truncation_offsets(size: int, count: int, rng: random.Random) -> list[int]:
    fixed = [0, 1, 2, 3, 5, 8, 13, 64, 255, 256, 1024, size // 2, size - 2, size - 1]
    spread = sorted(rng.randrange(1, size) for _ in range(count - len(fixed)))
    return sorted({o for o in fixed + spread if 0 <= o < size})


class _Writer:
    """Numbers the variants and writes each into its own run."""

    def __init__(self, logdir: Path, outside: Path) -> None:
        self.logdir = logdir
        self.outside = outside
        self.variants: list[Variant] = []

    def add(self, group: str, detail: str, write: Callable[[Path], None], **flags: bool) -> None:
        variant = Variant(f"{len(self.variants):03d}_{group}_{detail}", group, **flags)
        variant.session_dir(self.logdir).mkdir(parents=True)
        write(variant.host_file(self.logdir))
        self.variants.append(variant)

    def data(self, group: str, detail: str, data: bytes, **flags: bool) -> None:
        self.add(group, detail, lambda path: path.write_bytes(data), **flags)

    def space(self, detail: str, space: xplane_pb2.XSpace, **flags: bool) -> None:
        self.data("struct", detail, space.SerializeToString(), **flags)


def _truncations(w: _Writer, rng: random.Random) -> None:
    for base in BASES:
        data = base_bytes(base)
        for offset in _truncation_offsets(len(data), TRUNCATIONS_PER_BASE, rng):
            # A cut at 0 leaves an empty file: never a profile.
            w.data("trunc", f"{base}_{offset}", data[:offset], must_refuse=offset == 0)


def _flips(w: _Writer, rng: random.Random) -> None:
    for base in BASES:
        data = base_bytes(base)
        for _ in range(FLIPS_PER_BASE):
            position = rng.randrange(len(data))
            flipped = bytearray(data)
            flipped[position] ^= rng.choice((0x01, 0x80, 0xFF, rng.randrange(1, 256)))
            w.data("flip", f"{base}_{position}", bytes(flipped))


def _link(target: str | Path) -> Callable[[Path], None]:
    return lambda path: path.symlink_to(target)


def _socket(path: Path) -> None:
    """A Unix socket at `path` (bound at a short path, then moved: socket paths are short)."""
    short = Path(tempfile.mkdtemp()) / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(short))
    shutil.move(short, path)
    short.parent.rmdir()


def _specials(w: _Writer) -> None:
    real = base_bytes("custom_loop")
    outside_file = w.outside / "real.xplane.pb"
    outside_file.write_bytes(real)
    outside_session = w.outside / "session"
    outside_session.mkdir()
    (outside_session / f"{HOST}.xplane.pb").write_bytes(real)
    outside_plugins = w.outside / "run" / "plugins"
    (outside_plugins / "profile" / SESSION).mkdir(parents=True)
    (outside_plugins / "profile" / SESSION / f"{HOST}.xplane.pb").write_bytes(real)
    (w.outside / "dir.xplane.pb").mkdir()

    w.add("special", "fifo", lambda p: os.mkfifo(p), must_refuse=True)
    for device in ("zero", "urandom", "null", "full"):
        w.add("special", f"dev_{device}", _link(f"/dev/{device}"), must_refuse=True, hidden=True)
    for proc in ("self/status", "self/mem", "self/environ"):  # regular files of size 0
        # The environment's bytes are whatever the reader's are: maybe protobuf by chance.
        w.add("special", "proc_" + proc.replace("/", "_"), _link(f"/proc/{proc}"),
              must_refuse=proc != "self/environ", hidden=True)
    w.add("special", "etc_passwd", _link("/etc/passwd"), must_refuse=True, hidden=True)
    w.add("special", "self_loop", _link(f"{HOST}.xplane.pb"), must_refuse=True)

    def two_loop(path: Path) -> None:
        path.symlink_to("g.xplane.pb")
        (path.parent / "g.xplane.pb").symlink_to(path.name)

    w.add("special", "two_loop", two_loop, must_refuse=True)
    w.add("special", "dangling", _link("missing.xplane.pb"))
    w.add("special", "directory", lambda p: p.mkdir(), must_refuse=True)

    def directory_with_file(path: Path) -> None:
        path.mkdir()
        (path / f"{HOST}.xplane.pb").write_bytes(real)

    w.add("special", "directory_nested", directory_with_file, must_refuse=True)
    w.add("special", "socket", _socket, must_refuse=True)

    def sparse_5gib(path: Path) -> None:
        with open(path, "wb") as handle:
            handle.truncate(5 * 2**30)

    w.add("special", "sparse_5gib", sparse_5gib, must_refuse=True)
    w.add("special", "outside_file", _link(outside_file), hidden=True, follow_ok=True)
    w.add("special", "outside_dir", _link(w.outside / "dir.xplane.pb"), must_refuse=True,
          hidden=True)

    def linked_session(path: Path) -> None:
        session = path.parent
        session.rmdir()
        session.symlink_to(outside_session)

    w.add("special", "outside_session", linked_session, hidden=True, follow_ok=True)

    def linked_plugins(path: Path) -> None:
        plugins = path.parent.parent.parent
        (path.parent).rmdir()
        (path.parent.parent).rmdir()
        plugins.rmdir()
        plugins.symlink_to(outside_plugins)

    w.add("special", "outside_plugins", linked_plugins, hidden=True, follow_ok=True)

    def directory_loop(path: Path) -> None:
        path.write_bytes(real)  # a good file, next to a link back up to the run
        (path.parent.parent.parent.parent / "loop").symlink_to("..")

    w.add("special", "dir_loop", directory_loop)
    w.data("special", "empty", b"", must_refuse=True)
    w.data("special", "one_byte", b"\n", must_refuse=True)
    w.data("special", "zeros_4k", bytes(4096), must_refuse=True)


def _mutate(base: str, change: Callable[[xplane_pb2.XSpace], None]) -> xplane_pb2.XSpace:
    space = _space(base_bytes(base))
    change(space)
    return space


def _first_event(space: xplane_pb2.XSpace) -> xplane_pb2.XEvent:
    return _busy_lines(space)[0].events[0]


def _middle_event(space: xplane_pb2.XSpace) -> xplane_pb2.XEvent:
    line = max(_busy_lines(space), key=lambda ln: len(ln.events))
    return line.events[len(line.events) // 2]


def _structural(w: _Writer) -> None:
    for base in ("custom_loop", "jax_gpu_conv"):
        def shift_line(by_ns: int) -> Callable[[xplane_pb2.XSpace], None]:
            def change(space: xplane_pb2.XSpace) -> None:
                line = _busy_lines(space)[-1]
                line.timestamp_ns = max(_INT64_MIN, min(_INT64_MAX, line.timestamp_ns + by_ns))
            return change

        for days in (200, 107, 4):
            w.space(f"{base}_line_{days}d_later", _mutate(base, shift_line(days * _DAY_NS)),
                    must_refuse=True)
        w.space(f"{base}_line_200d_earlier", _mutate(base, shift_line(-200 * _DAY_NS)),
                must_refuse=True)
        for label, value in (("int64_max", _INT64_MAX), ("int64_min", _INT64_MIN)):
            def set_timestamp(space: xplane_pb2.XSpace, value: int = value) -> None:
                _busy_lines(space)[-1].timestamp_ns = value
            w.space(f"{base}_line_ts_{label}", _mutate(base, set_timestamp), must_refuse=True)

        def empty_line_far(space: xplane_pb2.XSpace) -> None:
            line = space.planes[0].lines.add()
            line.id, line.name, line.timestamp_ns = 999_999, "far empty", _INT64_MAX
        w.space(f"{base}_empty_line_far", _mutate(base, empty_line_far))

        for where, pick in (("first", _first_event), ("middle", _middle_event)):
            for label, value in (("neg1", -1), ("neg_huge", -(2**62)), ("int64_min", _INT64_MIN)):
                def set_duration(space: xplane_pb2.XSpace, pick=pick, value=value) -> None:
                    pick(space).duration_ps = value
                w.space(f"{base}_{where}_duration_{label}", _mutate(base, set_duration),
                        must_refuse=True)
            for label, value in (("2_62", 2**62), ("int64_max", _INT64_MAX)):
                def set_huge(space: xplane_pb2.XSpace, pick=pick, value=value) -> None:
                    pick(space).duration_ps = value
                w.space(f"{base}_{where}_duration_{label}", _mutate(base, set_huge),
                        must_refuse=True)
            for label, value in (("int64_max", _INT64_MAX), ("int64_min", _INT64_MIN),
                                 ("2_60", 2**60)):
                def set_offset(space: xplane_pb2.XSpace, pick=pick, value=value) -> None:
                    pick(space).offset_ps = value
                w.space(f"{base}_{where}_offset_{label}", _mutate(base, set_offset),
                        must_refuse=True)

        def all_durations_zero(space: xplane_pb2.XSpace) -> None:
            for line in _busy_lines(space):
                for event in line.events:
                    event.duration_ps = 0
        w.space(f"{base}_all_durations_zero", _mutate(base, all_durations_zero))

        def all_same_span(space: xplane_pb2.XSpace) -> None:
            for line in _busy_lines(space):
                for event in line.events:
                    event.offset_ps, event.duration_ps = 0, 10**9
        w.space(f"{base}_all_same_span", _mutate(base, all_same_span))

        def reversed_offsets(space: xplane_pb2.XSpace) -> None:
            for line in _busy_lines(space):
                for i, event in enumerate(line.events):
                    event.offset_ps = (len(line.events) - i) * 1000
                    event.duration_ps = i * 1500
        w.space(f"{base}_overlapping", _mutate(base, reversed_offsets))

        for label, value in (("huge", 10**15), ("neg", -7)):
            def unknown_metadata(space: xplane_pb2.XSpace, value: int = value) -> None:
                for line in _busy_lines(space)[:3]:
                    for event in line.events[::2]:
                        event.metadata_id = value
            w.space(f"{base}_metadata_id_{label}", _mutate(base, unknown_metadata))

        def occurrences(space: xplane_pb2.XSpace) -> None:
            for event in _busy_lines(space)[0].events[:50]:
                event.num_occurrences = _INT64_MAX
        w.space(f"{base}_num_occurrences_huge", _mutate(base, occurrences))

        def hostile_stats(space: xplane_pb2.XSpace) -> None:
            event = _middle_event(space)
            for stat in event.stats:
                stat.metadata_id = 10**12
            extra = event.stats.add()
            extra.metadata_id = next(iter(space.planes[0].stat_metadata), 1)
            extra.ref_value = 10**15
            big = event.stats.add()
            big.metadata_id = extra.metadata_id
            big.str_value = "=" * (8 << 20)  # 8 MiB
        w.space(f"{base}_stats_hostile", _mutate(base, hostile_stats))

        def many_stats(space: xplane_pb2.XSpace) -> None:
            event = _first_event(space)
            for i in range(100_000):
                stat = event.stats.add()
                stat.metadata_id = i % 7
                stat.int64_value = -i
        w.space(f"{base}_stats_100k_on_one_event", _mutate(base, many_stats))

        def step_stats(space: xplane_pb2.XSpace) -> None:
            """Every known numeric stat of every event set to extremes (ids, steps, bytes)."""
            for plane in space.planes:
                for line in plane.lines:
                    for i, event in enumerate(line.events):
                        for stat in event.stats:
                            if stat.WhichOneof("value") in ("int64_value", "uint64_value"):
                                if stat.WhichOneof("value") == "int64_value":
                                    stat.int64_value = _INT64_MIN if i % 2 else _INT64_MAX
                                else:
                                    stat.uint64_value = 2**64 - 1
        w.space(f"{base}_int_stats_extreme", _mutate(base, step_stats))

        def string_stats_garbage(space: xplane_pb2.XSpace) -> None:
            for plane in space.planes:
                for line in plane.lines:
                    for event in line.events:
                        for stat in event.stats:
                            if stat.WhichOneof("value") == "str_value":
                                stat.bytes_value = b"\xff\xfe<script>\x00"
        w.space(f"{base}_string_stats_as_bytes", _mutate(base, string_stats_garbage))

        def duplicate_ids(space: xplane_pb2.XSpace) -> None:
            for plane in space.planes:
                plane.id = 0
                for line in plane.lines:
                    line.id = 1
        w.space(f"{base}_duplicate_ids", _mutate(base, duplicate_ids))

        def metadata_children(space: xplane_pb2.XSpace) -> None:
            for plane in space.planes:
                for key, meta in plane.event_metadata.items():
                    meta.child_id.extend([key, -1, 10**15])
        w.space(f"{base}_metadata_child_cycles", _mutate(base, metadata_children))

    _counts(w)


def _counts(w: _Writer) -> None:
    def lines_200k(space: xplane_pb2.XSpace) -> None:
        plane = space.planes[0]
        for i in range(200_000):
            plane.lines.add().id = i
    w.space("custom_loop_200k_empty_lines", _mutate("custom_loop", lines_200k),
            must_refuse=True)

    def planes_200k(space: xplane_pb2.XSpace) -> None:
        for i in range(200_000):
            space.planes.add().id = i
    w.space("custom_loop_200k_empty_planes", _mutate("custom_loop", planes_200k),
            must_refuse=True)

    def metadata_100k(space: xplane_pb2.XSpace) -> None:
        plane = space.planes[0]
        for i in range(10**6, 10**6 + 100_000):
            plane.event_metadata[i].id = i
            plane.event_metadata[i].name = f"op{i}"
    w.space("custom_loop_100k_metadata", _mutate("custom_loop", metadata_100k))

    def nested_identical(space: xplane_pb2.XSpace) -> None:
        line = _busy_lines(space)[0]
        template = xplane_pb2.XEvent(metadata_id=line.events[0].metadata_id, offset_ps=0,
                                     duration_ps=10**6)
        line.events.extend([template] * 100_000)
    w.space("custom_loop_100k_identical_nested", _mutate("custom_loop", nested_identical))

    def hostnames(space: xplane_pb2.XSpace) -> None:
        space.hostnames[:] = ["h" * (1 << 20), "\x00\x1b[31m", "=cmd|' /C calc'!A0"]
        space.errors.extend(["e" * 10_000] * 100)
    w.space("custom_loop_hostnames_hostile", _mutate("custom_loop", hostnames))


def _multi_host(w: _Writer) -> None:
    real = base_bytes("custom_loop")

    def beside_good(write: Callable[[Path], None]) -> Callable[[Path], None]:
        def both(path: Path) -> None:
            (path.parent / "good.xplane.pb").write_bytes(real)
            write(path)
        return both

    def negative(space: xplane_pb2.XSpace) -> None:
        _middle_event(space).duration_ps = -1

    def far(space: xplane_pb2.XSpace) -> None:
        _busy_lines(space)[-1].timestamp_ns += 200 * _DAY_NS

    cases: dict[str, Callable[[Path], None]] = {
        "fifo": lambda p: os.mkfifo(p),
        "dev_zero": _link("/dev/zero"),
        "self_loop": _link(f"{HOST}.xplane.pb"),
        "truncated": lambda p: p.write_bytes(real[: len(real) // 3]),
        "negative_duration": lambda p: p.write_bytes(
            _mutate("custom_loop", negative).SerializeToString()),
        "line_200d_later": lambda p: p.write_bytes(
            _mutate("custom_loop", far).SerializeToString()),
        "same_file_twice": lambda p: p.write_bytes(real),
    }
    for detail, write in cases.items():
        w.add("multi", detail, beside_good(write))


def build_corpus(logdir: Path, outside: Path, seed: int = 16) -> list[Variant]:
    """Write every variant into `logdir` (one run each; `outside` receives the targets of the
    links that lead out of it) and return them. Deterministic for one seed."""
    logdir.mkdir(parents=True, exist_ok=True)
    outside.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    w = _Writer(logdir, outside)
    _truncations(w, rng)
    _flips(w, rng)
    _specials(w)
    _structural(w)
    _multi_host(w)
    return w.variants


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.hostile_corpus OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    variants = build_corpus(out / "logdir", out / "outside")
    groups: dict[str, int] = {}
    for variant in variants:
        groups[variant.group] = groups.get(variant.group, 0) + 1
    print(f"{len(variants)} variants in {out / 'logdir'}: "
          + ", ".join(f"{k} {v}" for k, v in groups.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
