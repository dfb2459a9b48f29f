"""Advice that agrees with the evidence (issue 18 item 5), on the real captures of tests/data.

Every recommendation of the overview, the input pipeline analyzer and the tf.data bottleneck
analysis carries the evidence it rests on, and advice the profile contradicts is withheld
with why: above all, no pipeline that already ends in prefetch (the tf.data view's
`ends_in_prefetch`, "Prefetch last: yes") is told to add one. The pipelines (tests/data/README):

    ends in prefetch      keras_fit, tfdata_parallel, tfdata_map_parallel, tfdata_interleave,
                          tfdata_py_function
    no final prefetch     tfdata_slow, tfdata_map_seq, tfdata_batch_map, tfdata_cache
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.analysis.hosts.multi_host import combine
from tb_profile_plugin.analysis.tf_data.bottlenecks import analyze_tf_data
from tb_profile_plugin.analysis.tf_data.shape import pipeline_shape
from tb_profile_plugin.cli import main
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.pb import xplane_pb2
from tests.fixtures import DATA_DIR, build_view

PREFETCHED = ("keras_fit", "tfdata_parallel", "tfdata_map_parallel", "tfdata_interleave",
              "tfdata_py_function")
NOT_PREFETCHED = ("tfdata_slow", "tfdata_map_seq", "tfdata_batch_map", "tfdata_cache")
TF_DATA = PREFETCHED + NOT_PREFETCHED
ALL = tuple(sorted({p.relative_to(DATA_DIR).parts[0] for p in DATA_DIR.glob("*/**/*.xplane.pb")}))
ADVISED_VIEWS = ("overview_page", "input_pipeline_analyzer")


def _capture(name: str) -> Path:
    return next((DATA_DIR / name).glob("**/*.xplane.pb"))


def _withheld(doc: dict[str, Any]) -> dict[str, str]:
    return {w["key"]: w["reason"] for w in doc["advice_withheld"]}


@pytest.mark.parametrize("name", TF_DATA)
def test_names_agree_with_the_tf_data_view_on_the_final_prefetch(name: str) -> None:
    """The overview reads the pipeline's end from iterator names; the tf.data view from the
    iterator tree. They must say the same for every real capture."""
    profile = decode_xspace(_capture(name).read_bytes())
    pipelines = [s for s in analyze_tf_data(profile).pipelines if s.pipeline.kind == "host"]
    assert pipelines
    shape = pipeline_shape(analyze(profile).tf_data_names)
    assert all(s.ends_in_prefetch for s in pipelines) == (not shape.without_prefetch)
    assert (name in PREFETCHED) == all(s.ends_in_prefetch for s in pipelines)


@pytest.mark.parametrize("name", PREFETCHED)
def test_a_pipeline_ending_in_prefetch_is_never_told_to_add_one(name: str) -> None:
    path = _capture(name)
    tf_data = build_view("tf_data_bottleneck_analysis", path)
    assert all(p["ends_in_prefetch"] for p in tf_data["pipelines"] if p["kind"] == "host")
    for view in ADVISED_VIEWS:
        doc = build_view(view, path)
        assert not any(".prefetch(" in a["text"] for a in doc["advice"]), (view, doc["advice"])
        if doc["bottleneck"]["input_bound"] in ("highly", "moderately"):
            assert _withheld(doc)["tf_data_prefetch"] == (
                "every tf.data pipeline already ends in prefetch (Iterator::Root::Prefetch)")
    for row in tf_data["bottlenecks"]:
        assert "tf_data_prefetch" not in [a["key"] for a in row["advice"]]
        assert _withheld(row)["tf_data_prefetch"] == (
            "the pipeline already ends in prefetch (Iterator::Root::Prefetch)")
        assert "does not end in prefetch" not in row["suggestion"]


@pytest.mark.parametrize("name", NOT_PREFETCHED)
def test_a_pipeline_without_final_prefetch_is_told_with_its_last_transformation(
        name: str) -> None:
    path = _capture(name)
    tf_data = build_view("tf_data_bottleneck_analysis", path)
    [pipeline] = [p for p in tf_data["pipelines"] if p["kind"] == "host"]
    assert pipeline["ends_in_prefetch"] is False
    [row] = tf_data["bottlenecks"]
    [given] = [a for a in row["advice"] if a["key"] == "tf_data_prefetch"]
    last = given["evidence"][0]
    assert last["what"] == "last transformation of the pipeline"
    assert last["value"].startswith("Iterator::Root::") and last["value"].count("::") == 2
    assert "Prefetch" not in last["value"]
    overview = build_view("overview_page", path)
    advised = {a["key"]: a for a in overview["advice"]}
    if overview["bottleneck"]["input_bound"] in ("highly", "moderately"):
        prefetch = advised["tf_data_prefetch"]
        assert prefetch["evidence"][1] == last  # the same transformation as the tf.data view
        assert f"ends in {last['value']}, not in a prefetch" in prefetch["text"]
    else:  # tfdata_cache: 3.1 % input, potentially input-bound: no input advice at all
        assert overview["bottleneck"]["stated_level"] == "potentially"
        assert not any(k.startswith("tf_data") for k in advised)
        # The reason says what the banner says ("potentially"), never "not input-bound"
        # (issue 29: the banner said POTENTIALLY while this said "not input-bound").
        why = _withheld(overview)["input"]
        assert why.startswith(f"input takes {overview['input_percent']:.1f} % of the step "
                              "time, under the 5 % that calls for input advice")
        assert "not input-bound" not in why and "potentially input-bound" in why


@pytest.mark.parametrize("name", ALL)
def test_every_piece_of_advice_quotes_its_evidence(name: str) -> None:
    """Each recommendation has evidence; its first figure or name is quoted in its text (the
    tf.data view names the stage by its short name)."""
    path = _capture(name)
    docs = [build_view(view, path) for view in ADVISED_VIEWS]
    assert [a["text"] for a in docs[0]["advice"]] == docs[0]["recommendations"]
    rows = [a for doc in docs for a in doc["advice"]]
    if name in TF_DATA:
        for row in build_view("tf_data_bottleneck_analysis", path)["bottlenecks"]:
            assert [a["text"] for a in row["advice"]] == row["suggestions"]
            rows += row["advice"]
    assert docs[0]["advice"], name  # every capture gets some advice
    for advice in rows:
        assert advice["evidence"], advice
        first = advice["evidence"][0]["value"]
        quoted = first.rsplit("::", 1)[-1].split("[")[0] if "::" in first else first
        assert quoted in advice["text"], advice


def test_input_pipeline_analyzer_gives_the_overviews_input_advice() -> None:
    for name in ("tfdata_slow", "keras_fit", "tfdata_py_function"):
        overview = build_view("overview_page", _capture(name))
        pipeline = build_view("input_pipeline_analyzer", _capture(name))
        input_keys = [a["key"] for a in overview["advice"] if a["key"].startswith("tf_data")]
        assert [a["key"] for a in pipeline["advice"]] == input_keys
        assert pipeline["advice_withheld"] == [
            w for w in overview["advice_withheld"] if w["key"] != "tf_function"]


def test_keras_fit_gets_no_tf_data_fix_it_already_has() -> None:
    """Keras' pipeline ends in Prefetch over a ParallelMapV2: the overview calls the run
    input-bound, but neither 'add prefetch' nor 'parallelise map' is given; the tf.data view's
    slowest stage is quoted instead."""
    doc = build_view("overview_page", _capture("keras_fit"))
    assert doc["bottleneck"]["input_bound"] in ("highly", "moderately")
    advised = {a["key"]: a for a in doc["advice"]}
    assert "tf_data_prefetch" not in advised and "tf_data_parallel_map" not in advised
    assert _withheld(doc)["tf_data_parallel_map"] == (
        "the pipeline's maps already run in parallel "
        "(Iterator::Root::Prefetch::ParallelMapV2)")
    pointer = advised["tf_data_bottleneck"]
    assert pointer["evidence"][1] == {"what": "slowest tf.data stage",
                                      "value": "Prefetch in Host:0"}
    tf_data = build_view("tf_data_bottleneck_analysis", _capture("keras_fit"))
    assert tf_data["summary"]["iterator_name"] == "Prefetch"


def _raw_autotune(path: Path, long_name: str) -> str:
    """The `autotune` stat of the first event named `long_name`, read with protobuf."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    for plane in space.planes:
        names = {k: m.name for k, m in plane.stat_metadata.items()}
        ids = {k for k, m in plane.event_metadata.items() if m.name == long_name}
        for line in plane.lines:
            for event in line.events:
                if event.metadata_id in ids:
                    stat = next(s for s in event.stats if names[s.metadata_id] == "autotune")
                    return names[stat.ref_value] if stat.HasField("ref_value") else stat.str_value
    raise AssertionError(long_name)


def test_autotuned_bottleneck_is_not_told_to_autotune() -> None:
    """tfdata_parallel's slowest stage is a ParallelMapV2 whose autotune stat is "true": the
    tf.data view must not advise num_parallel_calls=AUTOTUNE for it."""
    path = _capture("tfdata_parallel")
    [row] = build_view("tf_data_bottleneck_analysis", path)["bottlenecks"]
    assert row["iterator_long_name"] == "Iterator::Root::Prefetch::BatchV2::ParallelMapV2"
    assert _raw_autotune(path, row["iterator_long_name"]) == "true"
    assert not any("AUTOTUNE)" in text and "num_parallel_calls" in text
                   for text in row["suggestions"])
    [advice] = row["advice"]
    assert {"what": "autotune stat", "value": "true"} in advice["evidence"]
    assert _withheld(row)["tf_data_autotune"].endswith("(its autotune stat is true)")
    # the sequential map of tfdata_slow has no autotune and is told to parallelise
    [slow] = build_view("tf_data_bottleneck_analysis", _capture("tfdata_slow"))["bottlenecks"]
    assert "num_parallel_calls=tf.data.AUTOTUNE" in slow["suggestions"][0]
    assert {"what": "runs in parallel", "value": "no"} in slow["advice"][0]["evidence"]


def test_all_hosts_names_only_the_pipeline_without_prefetch() -> None:
    """Two hosts' analyses combined (one pipeline ends in prefetch, the other in BatchV2):
    the prefetch advice quotes only the BatchV2 end."""
    analyses = {name: analyze(decode_xspace(_capture(name).read_bytes()))
                for name in ("tfdata_slow", "tfdata_parallel")}
    combined = combine(analyses).combined
    shape = pipeline_shape(combined.tf_data_names)
    assert shape.last_transformations == ("Iterator::Root::BatchV2", "Iterator::Root::Prefetch")
    assert shape.without_prefetch == ("Iterator::Root::BatchV2",)


def test_cli_summary_prints_evidence_and_what_was_not_advised(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(DATA_DIR / "tfdata_parallel")]) == 0
    text = capsys.readouterr().out
    recommendations = text.split("Recommendations\n", 1)[1].split("\n\n", 1)[0]
    assert ".prefetch(" not in recommendations
    assert "evidence: input share of step time 12.5 %" in recommendations
    withheld = " ".join(text.split("Not advised, and why\n", 1)[1].split("\n\n", 1)[0].split())
    assert ("- tf_data_prefetch: every tf.data pipeline already ends in prefetch "
            "(Iterator::Root::Prefetch)") in withheld
    assert max(len(line) for line in text.splitlines()) <= 80
