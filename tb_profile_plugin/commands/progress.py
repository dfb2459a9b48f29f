"""A progress bar on stderr for long work (decoding large profiles, analysing them).

Shown only when stderr is a terminal and the work is large: the profiles to open weigh at
least `TB_PROFILE_PROGRESS_MIN_BYTES` (default 32 MiB). Otherwise every call is a no-op, so
scripts, pipes and CI logs never see it, unless asked: `TB_PROFILE_PROGRESS=always` shows it
whatever the stream and size (on a stream that is no terminal, one line per change at most
once a second and at the end of each pass over the hosts, instead of a bar redrawn in place),
`never` hides it. Work advances in stages
(one per file decoded, one per analysis); while a stage works on several hosts (the executor's
workers analysing a run's hosts, analysis/hosts/host_progress.py) the bar counts those hosts done /
total. A ticker redraws the elapsed time every quarter second, so a long single stage still
shows the command is alive. The line is erased when the work ends.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from types import TracebackType
from typing import TextIO

from tb_profile_plugin.analysis.hosts import host_progress

MIN_BYTES_ENV = "TB_PROFILE_PROGRESS_MIN_BYTES"
#: "always" or "never" (default: a terminal and large work).
WANTED_ENV = "TB_PROFILE_PROGRESS"
#: On a stream that is no terminal, a line at most this often (and only when it changed).
_LINE_EVERY_S = 1.0
DEFAULT_MIN_BYTES = 32 * 2**20
BAR_WIDTH = 24
_TICK_S = 0.25


def progress_wanted(size_bytes: int, stream: TextIO) -> bool:
    """Whether work on `size_bytes` of profiles gets a bar on `stream`."""
    asked = os.environ.get(WANTED_ENV, "").strip().lower()
    if asked in ("always", "never"):
        return asked == "always"
    try:
        threshold = int(os.environ.get(MIN_BYTES_ENV, DEFAULT_MIN_BYTES))
    except ValueError:
        threshold = DEFAULT_MIN_BYTES
    return size_bytes >= threshold and bool(getattr(stream, "isatty", lambda: False)())


class Progress:
    """`with Progress(total, size_bytes) as bar: bar.stage("decoding vm"); ...`."""

    def __init__(self, total_stages: int, size_bytes: int, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = progress_wanted(size_bytes, self.stream)
        self.total = max(total_stages, 1)
        self.done = 0
        self.label = ""
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self._hosts: tuple[str, int, int] | None = None  # (words, done, total) of this stage
        self._tracking = host_progress.tracking(host_progress.Tracker(self._on_hosts))
        self._last_line = ""
        self._last_line_at = 0.0

    def __enter__(self) -> Progress:
        self._tracking.__enter__()
        if self.enabled:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._tracking.__exit__(kind, exc, tb)
        self.finish()

    def _on_hosts(self, tracker: host_progress.Tracker) -> None:
        """A host of the current stage is done (analysis/hosts/host_progress.py)."""
        with self._lock:
            self._hosts = (tracker.words(), tracker.done, tracker.total)
        self._draw()

    def add(self, stages: int) -> None:
        """More stages than first planned (e.g. a second profile)."""
        with self._lock:
            self.total += stages

    def stage(self, label: str) -> None:
        """Start the next stage: the previous one is complete."""
        with self._lock:
            if self.label:
                self.done = min(self.done + 1, self.total)
            self.label = label
            self._hosts = None
        self._draw()

    def finish(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        if self.enabled and self._terminal:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self.enabled = False

    def _tick(self) -> None:
        while not self._stop.wait(_TICK_S):
            self._draw()

    def _draw(self) -> None:
        if not self.enabled:
            return
        with self._lock:
            done, total, label = self.done, self.total, self.label
            if self._hosts is not None and self._hosts[2] > 1:
                label, done, total = self._hosts
            filled = round(BAR_WIDTH * done / max(total, 1))
            elapsed_s = time.monotonic() - self._started
            text = f"{done}/{total} {label}"
            line = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {text} ({elapsed_s:.1f} s)"
            if not self._terminal:  # a line per change, at most once a second (and each end)
                now = time.monotonic()
                ended = self._hosts is not None and done == total
                if text == self._last_line or (now - self._last_line_at < _LINE_EVERY_S
                                               and not ended):
                    return
                self._last_line, self._last_line_at = text, now
        if self._terminal:
            self.stream.write("\r\x1b[2K" + line[:79])
        else:
            self.stream.write(f"tb-profile: {line}\n")
        self.stream.flush()
