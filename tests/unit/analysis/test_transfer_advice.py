"""A step bounded by transfers gets advice about the transfers, named for the device it ran on,
and no advice the profile does not call for (issue 28: a TPU program spending 96.5 % of device
time in copy-done was told only to use bf16 "so that matmuls and convolutions use Tensor
Cores", for a program with no matmul or convolution, on a TPU)."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures import build_view
from tests.unit.analysis.test_tpu_transfer_steps import _layout


def test_a_transfer_bound_tpu_step_is_advised_about_its_transfers(tmp_path: Path) -> None:
    path = tmp_path / "tpu-vm.xplane.pb"
    path.write_bytes(_layout())
    doc = build_view("overview_page", path)
    given = {a["key"]: a for a in doc["advice"]}
    assert list(given) == ["transfers"]
    text = given["transfers"]["text"]
    assert text.startswith("97.0 % of the step time is copies between memories")
    assert "against 3.0 % compute" in text and "On a TPU" in text and "HBM" in text
    assert "Tensor Core" not in text
    assert {e["what"]: e["value"] for e in given["transfers"]["evidence"]} == {
        "device-to-device share of step time (copies and waits for them)": "97.0 %",
        "device compute share of step time": "3.0 %",
        "device": "TPU v6 Lite",
    }
    assert all("Tensor Core" not in a["text"] for a in doc["advice"])
    assert "bounded by transfers" in doc["bottleneck"]["statement"]
