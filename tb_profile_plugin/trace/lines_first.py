"""The first windows of a big GPU capture, answered before its derived tracks are made.

A GPU plane's derived tracks (trace/derived.py: Steps, XLA Modules, framework and XLA ops) need
the host analysis' steps, the event forest and the canonical columns: on an 8-GPU capture of
10M events, three quarters of the whole index's build. The lines' own tracks need none of it.
So for a profile of `lines_first_min_events()` events or more with a GPU plane, and no whole
index yet (in memory or in the disk cache), a window is answered from the index of the lines
alone (`index_cache.lines_index`, the whole index's prefix: the same ids, columns and names,
trace/index.py "Storage"), while the whole index is built on a thread of its own. The document
says `derived_pending` and the page asks for its window again until it is not; the derived
tracks then appear above the streams. Details and search read the index the windows read; an
export (commands/export.py) waits for the whole one.

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
from tb_profile_plugin.analysis.events.profile_cache import built
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
    """The whole index's build on a thread of its own, under a budget of `continue_seconds`
    and no client (no request waits for it)."""

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
        try:
            with request_budget.bounded(continue_seconds(), None, "the trace's derived tracks"):
                trace_index(profile)
        except Exception as exc:  # noqa: BLE001 - the windows show the lines and say why
            logger.warning("the trace's derived tracks were not made: %s", exc)
            self.error = str(exc) or type(exc).__name__
        finally:
            self.done.set()


_WHOLE_BUILD = f"{__name__}._WholeBuild"
_start_lock = threading.Lock()


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


def _lines_first(profile: Profile) -> bool:
    return (profile.num_events >= lines_first_min_events()
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
        lines = lines_index(profile)
        build = _start(profile)
    else:
        lines = built(profile, lines_index)
    if build.error is not None:  # (lines dropped by a build that failed after: made again)
        return Shown(lines or lines_index(profile), derived_error=build.error)
    if lines is None or build.done.is_set():  # the whole index's columns are being placed
        return Shown(trace_index(profile))
    return Shown(lines, derived_pending=True)
