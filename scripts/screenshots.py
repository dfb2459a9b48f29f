#!/usr/bin/env python3
"""Screenshots of every view at 1280 px, on committed real captures: docs/screenshots/*.png.

Starts a real TensorBoard (`tensorboard --logdir <copy of some tests/data captures>`) on a
free port, opens each view of the standalone Profile page in Debian's Chromium (Playwright,
never `playwright install`) in a 1280 × 800 window, waits for the view's document (and, for
the trace, its first settled frame), and saves a PNG of the page, cut at MAX_HEIGHT_PX so the
files stay small. The README shows overview.png and trace_viewer.png.

    PYTHONPATH=. python scripts/screenshots.py            # writes docs/screenshots/
    PYTHONPATH=. python scripts/screenshots.py --out DIR
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.browser.conftest import running_tensorboard
from tests.browser.pages import LOAD_TIMEOUT_MS, first_host, fixture_run, open_view
from tests.browser.support import CHROMIUM, CHROMIUM_ARGS
from tests.fixtures import DATA_DIR

ROOT = Path(__file__).resolve().parent.parent
WIDTH_PX = 1280
MAX_HEIGHT_PX = 1600
# (file name, capture, view): every view, each on a real capture that has its data.
SHOTS = (
    ("overview", "keras_fit", "overview_page"),
    ("input_pipeline", "keras_fit", "input_pipeline_analyzer"),
    ("tensorflow_stats", "keras_fit", "tensorflow_stats"),
    ("trace_viewer", "keras_fit", "trace_viewer"),
    ("kernel_stats", "jax_gpu_attention", "kernel_stats"),
    ("memory_profile", "keras_fit", "memory_profile"),
    ("pod_viewer", "two_hosts", "pod_viewer"),
    ("tf_data_bottleneck_analysis", "tfdata_slow", "tf_data_bottleneck_analysis"),
    ("profile_info", "keras_fit", "profile_info"),
    # A real JAX capture on an NVIDIA H200: bf16 step, kernels inside a CUDA graph.
    ("overview_jax_nvidia", "jax_nvidia_train", "overview_page"),
    ("kernel_stats_jax_nvidia", "jax_nvidia_train", "kernel_stats"),
    ("trace_viewer_jax_nvidia", "jax_nvidia_train", "trace_viewer"),
    # Real PyTorch 2.13 traces (`*.pt.trace.json`): steps, DataLoader, memory; two gloo ranks.
    ("overview_pytorch", "pytorch_cpu_train", "overview_page"),
    ("operators_pytorch", "pytorch_cpu_train", "tensorflow_stats"),
    ("memory_profile_pytorch", "pytorch_cpu_train", "memory_profile"),
    ("pod_viewer_pytorch", "pytorch_gloo_2ranks", "pod_viewer"),
    ("trace_viewer_pytorch", "pytorch_gloo_2ranks", "trace_viewer"),
)
CAPTURES = sorted({capture for _, capture, _ in SHOTS} | {"tfdata_parallel"})


def _settle(page, view: str) -> None:  # type: ignore[no-untyped-def]
    if view == "trace_viewer":
        deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
        while time.monotonic() < deadline:
            hook = page.evaluate("() => window.__tbTrace ?? null")
            if hook and hook["frames"] > 0 and not hook["loading"] and not hook["frame_pending"]:
                break
            time.sleep(0.1)
    page.wait_for_timeout(800)  # charts' entry animations and the names' refit


def take(out: Path) -> list[Path]:
    """Writes one PNG per view into `out`; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="tbp-shots-") as work:
        logdir = Path(work) / "logdir"
        for capture in CAPTURES:
            shutil.copytree(DATA_DIR / capture, logdir / capture)
        with running_tensorboard(logdir, Path(work)) as base, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": WIDTH_PX, "height": 800})
            for name, capture, view in SHOTS:
                run = fixture_run(base, capture)
                open_view(page, base, view, run, first_host(base, run, view))
                _settle(page, view)
                height = min(MAX_HEIGHT_PX, page.evaluate("document.documentElement.scrollHeight"))
                path = out / f"{name}.png"
                page.screenshot(
                    path=str(path),
                    full_page=True,
                    clip={"x": 0, "y": 0, "width": WIDTH_PX, "height": height},
                )
                written.append(path)
                print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: "
                      f"{run} {view}, {WIDTH_PX}x{height}, {path.stat().st_size} bytes")
            browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args(argv)
    take(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
