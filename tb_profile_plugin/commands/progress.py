"""A progress bar on stderr for long work (decoding large profiles, analysing them).

Shown only when stderr is a terminal and the work is large: the profiles to open weigh at
least `TB_PROFILE_PROGRESS_MIN_BYTES` (default 32 MiB). Otherwise every call is a no-op, so
scripts, pipes and CI logs never see it. Work advances in stages (one per file decoded, one
per analysis); a ticker redraws the elapsed time every quarter second, so a long single stage
still shows the command is alive. The line is erased when the work ends.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from types import TracebackType
from typing import TextIO

MIN_BYTES_ENV = "TB_PROFILE_PROGRESS_MIN_BYTES"
DEFAULT_MIN_BYTES = 32 * 2**20
BAR_WIDTH = 24
_TICK_S = 0.25


def progress_wanted(size_bytes: int, stream: TextIO) -> bool:
    """Whether work on `size_bytes` of profiles gets a bar on `stream`."""
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

    def __enter__(self) -> Progress:
        if self.enabled:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.finish()

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
        self._draw()

    def finish(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        if self.enabled:
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
            filled = round(BAR_WIDTH * self.done / self.total)
            elapsed_s = time.monotonic() - self._started
            line = (f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done}/{self.total} "
                    f"{self.label} ({elapsed_s:.1f} s)")
        self.stream.write("\r\x1b[2K" + line[:79])
        self.stream.flush()
