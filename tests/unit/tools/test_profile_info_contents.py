"""profile_info's producer, spans and "what each view needs" (issue 18 item 8), on every real
capture of tests/data, against counts read from the files with protobuf and the views' own
documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.pb import xplane_pb2
from tests.fixtures import DATA_DIR, build_view, xplane_files


def _count(path: Path, wanted: object) -> int:
    """Events whose name `wanted` accepts, read with protobuf directly."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    total = 0
    for plane in space.planes:
        ids = {k for k, m in plane.event_metadata.items() if wanted(m.name)}  # type: ignore[operator]
        total += sum(e.metadata_id in ids for line in plane.lines for e in line.events)
    return total


@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: p.relative_to(DATA_DIR).parts[0])
def test_contents_equal_the_files_and_the_views(path: Path) -> None:
    doc = build_view("profile_info", path)
    [host] = doc["hosts"]
    contents = host["contents"]
    assert contents["allocator_events"] == _count(
        path, lambda n: n in ("MemoryAllocation", "MemoryDeallocation"))
    assert contents["iterator_events"] == _count(path, lambda n: n.startswith("Iterator::"))
    assert contents["events"] == doc["total_events"] == _count(path, lambda n: True)
    overview = build_view("overview_page", path)
    assert contents["steps"] == len(overview["steps"])
    assert contents["step_rule"] == overview["step_rule"]
    assert host["producer"]["framework"] == overview["run_environment"]["framework"]
    assert host["producer"]["evidence"] == overview["run_environment"]["framework_evidence"]
    stats = build_view("tensorflow_stats", path, include_idle="false")
    assert contents["op_rows"] == stats["num_rows"]
    lines = [line for line in host["lines"] if line["events"]]
    assert host["span_ms"] == [min(x["begin_ms"] for x in lines), max(x["end_ms"] for x in lines)]
    request = registry.ViewRequest("run", "h", {"h": decode_xspace(path.read_bytes())}, {})
    facts = request.run_facts()
    needs = {row["view"]: row for row in doc["views"]}
    assert list(needs) == [v.name for v in registry.ordered_views() if v.name != "profile_info"]
    for view, row in needs.items():
        assert row["offered"] == registry.VIEWS[view].available(facts), view
    assert needs["tf_data_bottleneck_analysis"]["has_data"] == (contents["iterator_events"] > 0)
    assert needs["kernel_stats"]["has_data"] == (contents["gpu_kernels"] > 0)
    if contents["gpu_kernels"]:
        kernels = build_view("kernel_stats", path)
        assert contents["gpu_kernels"] == sum(r["occurrences"] for r in kernels["rows"])


def test_figures_of_the_readme() -> None:
    """tests/data/README's figures: keras_fit 48 allocator and 50 Iterator events, 4 Keras
    steps; tfdata_slow 272 Iterator events; the JAX CPU captures record jax 0.10.2 (and the
/host:metadata plane's cpu_version "cpu")."""
    keras = build_view("profile_info", next((DATA_DIR / "keras_fit").glob("**/*.xplane.pb")))
    needs = {row["view"]: row["found"] for row in keras["views"]}
    assert needs["memory_profile"] == "48 allocator events"
    assert needs["tf_data_bottleneck_analysis"] == "50 iterator events"
    assert needs["pod_viewer"] == "4 steps (Keras step functions)"
    assert needs["kernel_stats"] == "no GPU plane"
    slow = build_view("profile_info", next((DATA_DIR / "tfdata_slow").glob("**/*.xplane.pb")))
    assert slow["hosts"][0]["contents"]["iterator_events"] == 272
    jax = build_view("profile_info", next((DATA_DIR / "jax_cpu_steps").glob("**/*.xplane.pb")))
    assert jax["hosts"][0]["producer"]["versions"] == {
        "cpu_version": "cpu", "jax_version": "0.10.2", "jaxlib_version": "0.10.2"}
    assert jax["hosts"][0]["capture_window_ms"] == pytest.approx(34.1, abs=0.05)  # README
