"""A profile decoded events first: its lines' stats walked from the file when first used.

The trace viewer's first window of a big capture reads the events' times and names alone
(trace/lines_first.py: the index of the lines); their stats (a kernel's correlation id, its
HLO op, its launch details: 5-13 per event on a GPU stream) are read by the analyses its
derived tracks wait for, and by every other view. Walking a line's events without its stats
takes a fifth to a sixth of the whole walk (the 8-GPU 10M-event capture's 12 largest lines: 0.47 s
against 2.4-3.1 s), so the store decodes a big XSpace that the trace viewer opens first with
its stats left in the file (`ProfileStore.open(stats_later=True)`, decode.py
`decode_xspace(stats_later=...)`), and each line's `stats` is a `LazyStatColumns`
(xspace/lazy_columns.py) whose first use walks **every** line again, whole, from the file.

The second walk is the decode's own (`_decode_line`: the same dense coding), so the stats are
the ones a whole decode gives. It reads the file the store opened, as the store checks it:
`reopen` gives the file only while its identity (size, times, inode, content fingerprint) is
the one decoded, and each line's events walked again must equal those held (ids, starts,
durations); otherwise every reader gets `UnreadableProfile` ("changed on disk ... reload"),
and the store, which checks the identity on every open, decodes the new file for the next
request. A stat the first walk passed over and the second finds malformed is refused the same
way (named, for every reader: the lines and the trace's line tracks still show).

The walk runs once, on a thread of its own with threads of its own (the column pool's threads
may be the ones waiting for it: column_threads.py), and finishes whatever the request that
started it does; readers wait at their budget's checkpoints (`request_budget.wait`). Until it
is done the stats count no bytes (`nbytes`: nothing held); once done, `when_loaded` callbacks
run (the store's: the disk cache entry, written only with the stats, and a recount of the
memory bound).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_profile_plugin import column_threads, memory_release, request_budget
from tb_profile_plugin.errors import NotFound, UnreadableProfile
from tb_profile_plugin.xspace import lazy_columns
from tb_profile_plugin.xspace.model import EventColumns, Profile, StatColumns

logger = logging.getLogger(__name__)

#: A line walked again: its event metadata ids, offsets from the line's timestamp (ps),
#: durations (ps), and its stats.
Walked = tuple[np.ndarray, np.ndarray, np.ndarray, StatColumns]
#: `reopen()`: the file as decoded, for the time of the `with` (raises when it changed).
Reopen = Callable[[], contextlib.AbstractContextManager[Any]]
#: `walker(data)`: the function walking line k of the reopened `data` again, whole.
Walker = Callable[[Any], Callable[[int], Walked]]


@dataclass
class _LineRef:
    """What the second walk checks a line against: its events as held, and the shift that
    made their starts from the offsets (`(timestamp_ns - origin_ns) * 1000`)."""

    size_bytes: int
    events: EventColumns | None = None
    shift_ps: int = 0


class StatsLater:
    """Every line's stats of one profile, walked together on first use (module docstring)."""

    def __init__(self, reopen: Reopen, walker: Walker, line_bytes: list[int]) -> None:
        self._reopen = reopen
        self._walker = walker
        self._lines = [_LineRef(size) for size in line_bytes]
        self._parts = [_StatsPart(self) for _ in line_bytes]
        objects = [lazy_columns.lazy(lazy_columns.LazyStatColumns, part)
                   for part in self._parts]
        self._objects = [weakref.ref(obj) for obj in objects]
        self._new: list[StatColumns] | None = objects  # (handed out once, by `stats`)
        self._lock = threading.Lock()
        self._started = False
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[], None]] = []
        #: The file's name, which every error names (the store's; "" reads no prefix).
        self.name = ""

    def stats(self) -> list[StatColumns]:
        """Every line's lazy stats (in file order), handed out once: the lines hold them."""
        objects, self._new = self._new, None
        assert objects is not None, "the stats are handed out once"
        return objects

    def hold(self, line: int, events: EventColumns, shift_ps: int) -> None:
        """Line `line`'s events as the profile holds them (checked against the second walk)."""
        self._lines[line].events = events
        self._lines[line].shift_ps = shift_ps

    @property
    def loaded(self) -> bool:
        """Whether every line's stats are there."""
        return self._done.is_set() and self._error is None

    def when_loaded(self, callback: Callable[[], None]) -> None:
        """Calls `callback()` once the stats are loaded (now, if they are); never when they
        cannot be. It must not hold the profile (`weakref`): the parts outlive no one."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        if self._error is None:
            callback()

    def load(self) -> None:
        """Every line's stats, walked once (module docstring); raises what stopped the walk."""
        with self._lock:
            if not self._started:
                try:
                    threading.Thread(target=self._run, daemon=True,
                                     name="tb-profile stats later").start()
                except RuntimeError as exc:  # (no thread to be had: said to every reader)
                    self._fail(UnreadableProfile, f"the profile's stats were not read ({exc})")
                self._started = True
        request_budget.wait(self._done)
        error = self._error
        if error is not None:  # a fresh exception for each reader (no frame of the walk kept)
            raise type(error)(str(error))

    def _run(self) -> None:
        failure: tuple[type[Exception], str] | None = None
        try:
            walked = self._walk_all()
            for part, ref, stats in zip(self._parts, self._objects, walked, strict=True):
                obj = ref()
                if obj is not None:  # (else its line is gone with its profile)
                    lazy_columns.adopt(obj, stats, StatColumns)
                part.done = True
            del walked
            self._lines = []  # (what the walk checked: the profile's own events)
        except (NotFound, UnreadableProfile) as exc:
            failure = type(exc), str(exc)
        except (ValueError, OSError) as exc:
            failure = UnreadableProfile, (f"the profile's stats could not be read ({exc}); the "
                                          "file is truncated or damaged")
        except BaseException as exc:  # noqa: BLE001 - handed to every reader
            logger.exception("the profile's stats were not read")
            failure = UnreadableProfile, f"the profile's stats were not read: {exc}"
        # Only the kind and the sentence are kept: the exception's frames would hold the stats
        # walked so far and a line's bytes for as long as the profile is kept.
        memory_release.release_now()  # (the walks' temporaries, on threads of their own)
        with self._lock:
            if failure is not None:
                self._fail(*failure)
            callbacks, self._callbacks = self._callbacks, []
            self._done.set()
        if failure is None:
            for callback in callbacks:
                try:
                    callback()
                except Exception:  # noqa: BLE001 - the stats are read; the others still run
                    logger.exception("after the profile's stats were read")

    def _fail(self, kind: type[Exception], sentence: str) -> None:
        """(Under the lock.) The walk failed: every reader is told `sentence`, naming the file."""
        named = f"{self.name}: {sentence}" if self.name not in sentence else sentence
        self._error = kind(named)
        self._done.set()

    def _walk_all(self) -> list[StatColumns]:
        """Every line walked again, the largest first, on threads of their own."""
        stats: list[StatColumns | None] = [None] * len(self._lines)
        order = sorted(range(len(self._lines)), key=lambda k: -self._lines[k].size_bytes)
        with self._reopen() as data:
            walk = self._walker(data)

            def one(k: int) -> None:
                metadata_id, offset_ps, duration_ps, line_stats = walk(k)
                self._check_events(k, metadata_id, offset_ps, duration_ps)
                stats[k] = line_stats

            threads = max(1, min(column_threads.threads(), len(order)))
            pool = ThreadPoolExecutor(threads, thread_name_prefix="tb-profile-stats")
            try:
                for future in [pool.submit(one, k) for k in order]:
                    future.result()
            finally:  # (a line that failed: the lines not begun are not walked)
                pool.shutdown(wait=True, cancel_futures=True)
        return [s if s is not None else StatColumns.empty() for s in stats]

    def _check_events(self, k: int, metadata_id: np.ndarray, offset_ps: np.ndarray,
                      duration_ps: np.ndarray) -> None:
        """UnreadableProfile unless line `k` walked again has the events the profile holds."""
        ref = self._lines[k]
        events = ref.events
        same = events is not None and len(events.metadata_id) == len(metadata_id) and (
            np.array_equal(events.metadata_id, metadata_id)
            and np.array_equal(events.duration_ps, duration_ps)
            and (not len(offset_ps) or bool(np.all(
                events.start_ps == offset_ps + np.int64(ref.shift_ps)))))
        if not same:
            raise UnreadableProfile(CHANGED)


#: What every reader of a profile whose file changed between its two walks is told.
CHANGED = ("the profile file changed on disk while it was read (its stats are read after its "
           "events); reload the page to read the new file")


class _StatsPart:
    """One line's stats: read by its profile's `StatsLater` with every other line's (the
    lines hold their stats, the stats their part, the part its owner: no cycle, the owner
    holds the stats objects by weak reference)."""

    def __init__(self, owner: StatsLater) -> None:
        self.owner = owner
        self.done = False

    @property
    def length(self) -> int | None:
        return None  # (the rows are known once walked)

    @property
    def nbytes(self) -> int:
        return 0  # (nothing held until walked)

    def materialise(self, obj: Any, base: type) -> None:
        self.owner.load()


def pending(profile: Profile) -> StatsLater | None:
    """The profile's `StatsLater` while its stats are not loaded; None once they are, or when
    they were decoded whole."""
    for plane in profile.planes:
        for line in plane.lines:
            part = line.stats.__dict__.get("_part")
            if isinstance(part, _StatsPart) and not part.done:
                return part.owner
    return None
