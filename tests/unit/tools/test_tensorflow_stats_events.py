"""tensorflow_stats counts the profile's events, so an empty table can say why it is empty."""

from __future__ import annotations

from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import DATA_DIR, build_view


def test_num_events_is_every_event_of_the_profile() -> None:
    path = next((DATA_DIR / "keras_fit").glob("**/*.xplane.pb"))
    doc = build_view("tensorflow_stats", path)
    assert doc["num_events"] == decode_xspace(path.read_bytes()).num_events == 3486
    assert doc["num_rows"] > 0
