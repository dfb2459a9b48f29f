"""The first windows of a big GPU capture, answered before its derived tracks are made.

A GPU plane's derived tracks (trace/derived.py: Steps, XLA Modules, framework and XLA ops) need
the host analysis' steps, the event forest and the canonical columns: on an 8-GPU capture of
10M events, three quarters of the whole index's build. The lines' own tracks need none of it.
So for a profile of `lines_first_min_events()` events or more with a GPU plane, and no whole
index yet (in memory or in the disk cache), kept by the store, shown alone (not among a run's
hosts: the ids of the hosts after it would move when its derived tracks come), and asked by a
request of the server (the command line waits for the whole index), a window is answered from
the index of the lines alone (`index_cache.lines_index`, the whole index's prefix: the same
ids, columns, names and tids, trace/index.py "Storage"), while the whole index is built on a
thread of its own. The document says `derived_pending` and the page asks for the whole span
again until it is not, then draws the timeline with the derived tracks above the streams.
Details and search read the index the windows read; an export (commands/export.py) waits
for the whole one.

The whole index's build drops the lines index once the analyses its derived tracks read are
made (most of its time), so that it is not held with the derived tracks and the whole index's
columns (the build's peak); a window asked after that waits for the whole index.
A build that fails is not tried again for the profile: the windows show the lines, and say why
the derived tracks are missing (`Shown.derived_error`).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from dataclasses import dataclass

from tb_profile_plugin import request_budget
from tb_profile_plugin.analysis.events.profile_cache import built, forget
from tb_profile_plugin.continuations import continue_seconds
from tb_profile_plugin.trace import index_cache
from tb_profile_plugin.trace.index import TraceIndex
from tb_profile_plugin.trace.index_cache import lines_index, trace_index
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers import PlaneKind, plane_kind

logger = logging.getLogger(__name__)

LINES_FIRST_MIN_EVENTS_ENV = "TB_PROFILE_TRACE_LINES_FIRST_EVENTS"
#: Below this many events the whole index is built at once (the 2M-event 8-GPU capture's: 1.3 s
#: cold, of which 0.5 s are the derived tracks).
DEFAULT_LINES_FIRST_MIN_EVENTS = 1_000_000


def lines_first_min_events() -> int:
    """Events from which a GPU capture's first windows come from its lines alone
    (TB_PROFILE_TRACE_LINES_FIRST_EVENTS; 0: every GPU capture's)."""
    text = os.environ.get(LINES_FIRST_MIN_EVENTS_ENV, "").strip()
    return int(text) if text.isdigit() else DEFAULT_LINES_FIRST_MIN_EVENTS


@dataclass(frozen=True)
class Shown:
    """The index a window of the profile reads now."""

    index: TraceIndex
    #: The derived tracks are being made: they are not in `index` yet.
    derived_pending: bool = False
    #: Why the derived tracks could not be made (they are not in `index`); None otherwise.
    derived_error: str | None = None


class _WholeBuild:
    """The whole index's build on a thread of its own, under a budget of its own and no
    client (no request waits for it)."""

    def __init__(self, profile: Profile) -> None:
        self.done = threading.Event()
        self.error: str | None = None
        threading.Thread(target=self._run, args=(profile,), daemon=True,
                         name="tb-profile-trace-derived").start()

    @functools.cached_property
    def fixed_nbytes(self) -> int:
        """Nothing it holds is counted (model.result_nbytes): the index is trace_index's."""
        return 0

    def _run(self, profile: Profile) -> None:
        # As long as a request may build (continuing past it, or a request's own budget when
        # continuing is off): no client waits, so nothing else stops it.
        seconds = max(continue_seconds(), request_budget.request_seconds())
        try:
            with request_budget.bounded(seconds, None, "the trace's derived tracks"):
                trace_index(profile)
        except Exception as exc:  # noqa: BLE001 - the windows show the lines and say why
            logger.warning("the trace's derived tracks were not made: %s", exc)
            self.error = str(exc) or type(exc).__name__
        finally:
            # The lines index is the whole one's prefix: never kept beside it (the build
            # drops it once its analyses are made; one made again meanwhile goes now).
            forget(profile, lines_index)
            self.done.set()
            if not _kept(profile):  # the store let the profile go meanwhile: what the build
                profile.derived.clear()  # added would hold it in a cycle (store.py)


_WHOLE_BUILD = f"{__name__}._WholeBuild"
_start_lock = threading.Lock()
_first_lock = threading.Lock()


def _started(profile: Profile) -> _WholeBuild | None:
    build = profile.derived.results.get(_WHOLE_BUILD)
    return build if isinstance(build, _WholeBuild) else None


def _start(profile: Profile) -> _WholeBuild:
    """The whole index's build of `profile`, started once (kept with the profile's results,
    not as a `per_profile` result: that one's end would release the scratch columns the
    build's thread is reading)."""
    with _start_lock:
        build = _started(profile)
        if build is None:
            build = _WholeBuild(profile)
            profile.derived.add(_WHOLE_BUILD, build)
        return build


def _kept(profile: Profile) -> bool:
    """Whether the store keeps the profile (and so its results) past the request."""
    return profile.derived.on_grow is not None


def _lines_first(profile: Profile) -> bool:
    """Whether the profile's first windows come from its lines (module docstring): a request
    of the server (the command line and scripts wait for the whole index), on a profile the
    store keeps (a later window finds what the build made), big, with a GPU plane, and no
    whole index on disk."""
    return (request_budget.active() and _kept(profile)
            and profile.num_events >= lines_first_min_events()
            and any(plane.lines and plane_kind(plane.name) == PlaneKind.GPU
                    for plane in profile.planes)
            and not index_cache.on_disk(profile))


def shown_index(profile: Profile) -> Shown:
    """The whole index when it is built, or cheap to have (a small or host-only capture, or
    one in the disk cache); else the index of the lines alone, the whole one's build started
    (module docstring)."""
    whole = built(profile, trace_index)
    if whole is not None:
        return Shown(whole)
    build = _started(profile)
    lines: TraceIndex | None
    if build is None:
        if not _lines_first(profile):
            return Shown(trace_index(profile))
        with _first_lock:  # (one first request makes the lines and starts the build)
            build = _started(profile)
            lines = built(profile, lines_index) if build else lines_index(profile)
            build = build or _start(profile)
    else:
        lines = built(profile, lines_index)
    if build.error is not None:  # (lines dropped by a build that failed after: made again)
        return Shown(lines or lines_index(profile), derived_error=build.error)
    if lines is None or build.done.is_set():  # the whole index's columns are being placed
        return Shown(trace_index(profile))
    return Shown(lines, derived_pending=True)
