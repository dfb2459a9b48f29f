"""In-page zoom latency of the trace viewer (`python scripts/zoom_latency.py LOGDIR`).

Serves LOGDIR with `tb-profile serve`, opens the trace viewer of its first run in Chromium at
1280 × 800 and times, with the page's own figures (`window.__tbTrace.data_latency_ms`: from
the input event to the first frame that draws a window covering the new view), zooms that go
past what the loaded window can show:

  zoom_in_idle       a 3x ctrl+wheel zoom in once the viewer is idle (prefetches done)
  zoom_in_moved      the pointer jumps to a new place --moved-ms (default 0) before a 3x zoom
                     in: the "zoom about a new point", which no prefetch about the pointer saw
  zoom_out_idle      a 3x ctrl+wheel zoom out once the viewer is idle
  zoom_in_9x_fast    two 3x zooms in 30 ms apart (9x): no prefetch can have seen the second
                     level, so this is the server's window answer (query, JSON, gzip, parse)

Each zoom is undone (and the viewer left to settle) before the next. Prints one line per
kind (every figure, median, max) and the machine's load average, as JSON with --json.
A benchmark, not a test: the browser test `test_a_zoom_that_needs_new_data_draws_it_within_
150_ms` asserts the budget on the suite's synthetic profile.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from tests.browser.pages import first_host, open_view, runs_of_server  # noqa: E402

WHEEL_3X = 550  # the viewer zooms exp(delta / 500): 550 is a 3x zoom


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _hook(page: Page) -> dict[str, Any]:
    value: dict[str, Any] = page.evaluate("() => window.__tbTrace ?? null") or {}
    return value


def _wait(page: Page, ready: Any, timeout_s: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        h = _hook(page)
        if h and ready(h):
            return h
        time.sleep(0.02)
    raise TimeoutError("the trace viewer did not settle")


def _idle(h: dict[str, Any]) -> bool:
    return (
        h.get("frames", 0) > 0
        and not h.get("frame_pending", False)
        and not h.get("loading", False)
        and not h.get("prefetching", False)
        and h.get("loaded") is not None
        and h.get("drawn_url") == h["loaded"]["url"]
    )


def _zoom(page: Page, delta: int) -> float | None:
    """One ctrl+wheel zoom; the wait for new data (ms), or None if the loaded data covered it."""
    seen = len(_hook(page).get("data_latency_ms", []))
    frames = _hook(page).get("frames", 0)
    page.keyboard.down("Control")
    page.mouse.wheel(0, delta)
    page.keyboard.up("Control")
    h = _wait(page, lambda x: x.get("frames", 0) > frames and not x.get("frame_pending", False))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        h = _hook(page)
        if len(h.get("data_latency_ms", [])) > seen:
            return float(h["data_latency_ms"][-1])
        if _idle(h):
            return None  # covered without new data (a kept window showed it)
        time.sleep(0.01)
    raise TimeoutError("no new data was drawn")


def measure(base: str, rounds: int, seed: int, moved_ms: int) -> dict[str, list[float]]:
    rng = random.Random(seed)
    out: dict[str, list[float]] = {
        "zoom_in_idle": [], "zoom_in_moved": [], "zoom_out_idle": [], "zoom_in_9x_fast": [],
    }
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        run = runs_of_server(base)[0]
        open_view(page, base, "trace_viewer", run, first_host(base, run, "trace_viewer"))
        h = _wait(page, _idle)
        box = page.get_by_test_id("trace-canvas").bounding_box()
        assert box is not None
        left = box["x"] + 200
        width = h["track_width_px"]

        def point() -> tuple[float, float]:
            return left + width * rng.uniform(0.1, 0.9), box["y"] + 120

        page.mouse.move(*point())
        for _ in range(rounds):
            # zoom in at rest
            _wait(page, _idle)
            t = _zoom(page, -WHEEL_3X)
            out["zoom_in_idle"].append(t if t is not None else 0.0)
            _wait(page, _idle)
            _zoom(page, WHEEL_3X)
            # zoom in about a new point, 120 ms after the pointer got there
            _wait(page, _idle)
            page.mouse.move(*point())
            if moved_ms:
                page.wait_for_timeout(moved_ms)
            t = _zoom(page, -WHEEL_3X)
            out["zoom_in_moved"].append(t if t is not None else 0.0)
            _wait(page, _idle)
            _zoom(page, WHEEL_3X)
            # zoom out at rest, then back in
            _wait(page, _idle)
            t = _zoom(page, WHEEL_3X)
            out["zoom_out_idle"].append(t if t is not None else 0.0)
            _wait(page, _idle)
            _zoom(page, -WHEEL_3X)
            # two zooms in at once (9x): the latency of the first input to the 9x data
            _wait(page, _idle)
            seen = len(_hook(page).get("data_latency_ms", []))
            page.keyboard.down("Control")
            page.mouse.wheel(0, -WHEEL_3X)
            page.wait_for_timeout(30)
            page.mouse.wheel(0, -WHEEL_3X)
            page.keyboard.up("Control")
            h = _wait(page, lambda x, n=seen: len(x.get("data_latency_ms", [])) > n and _idle(x))
            out["zoom_in_9x_fast"].append(float(h["data_latency_ms"][-1]))
            _zoom(page, 2 * WHEEL_3X)
        browser.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir", type=Path)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--moved-ms", type=int, default=0,
                        help="pointer move -> zoom delay of the zoom_in_moved kind")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tb_profile_plugin.cli", "serve", "--port", str(port),
         str(args.logdir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        result = measure(base, args.rounds, args.seed, args.moved_ms)
    finally:
        server.terminate()
        server.wait(timeout=30)
    load = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"load_1min": load, **result}))
    else:
        for kind, values in result.items():
            every = ", ".join(f"{v:.0f}" for v in values)
            print(f"{kind:15s} median {statistics.median(values):6.1f} ms  "
                  f"max {max(values):6.1f} ms  ({every})")
        print(f"load average (1 min) {load:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
