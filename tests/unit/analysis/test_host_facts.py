"""A host's facts from an outline of its file (no event columns) equal those of a decode."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tb_profile_plugin.analysis.hosts.host_facts import HostFacts, host_facts, host_facts_file
from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.xspace import decode
from tb_profile_plugin.xspace.decode import decode_xspace, outline_xspace
from tests.fixtures import DATA_DIR, xplane_files


def _same(a: HostFacts, b: HostFacts) -> None:
    assert a.readable and b.readable
    assert a.plane_names == b.plane_names
    assert a.event_names == b.event_names
    assert a.num_events == b.num_events
    assert a.errors == b.errors
    assert a.warnings == b.warnings


@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: str(p.relative_to(DATA_DIR)))
def test_outline_facts_equal_decoded_facts_on_real_captures(path: Path) -> None:
    expected = host_facts(decode_xspace(path.read_bytes()))
    assert expected.num_events > 0 and expected.event_names
    _same(host_facts_file(str(path)), expected)


@pytest.mark.parametrize("pure", [True, False] if decode.compiled_decoder_available() else [True])
def test_outline_refuses_only_what_the_decode_refuses(pure: bool) -> None:
    """Cut and flipped copies of a real capture: an outline that refuses a file is matched
    by a decode that refuses it too (facts never hide a readable host); an outline that
    reads one counts what the decode would, whenever the decode reads it."""
    data = (DATA_DIR / "jax_cpu_plain").glob("**/*.xplane.pb").__next__().read_bytes()
    rng = random.Random(4)
    refused = 0
    for _ in range(120):
        cut = data[: rng.randrange(1, len(data))]
        if rng.random() < 0.5:
            at = rng.randrange(len(cut))
            cut = cut[:at] + bytes([cut[at] ^ (1 << rng.randrange(8))]) + cut[at + 1:]
        try:
            outline = outline_xspace(cut, pure=pure)
        except UnreadableProfile:
            refused += 1
            with pytest.raises(UnreadableProfile):
                decode_xspace(cut, pure=pure)
            continue
        try:
            profile = decode_xspace(cut, pure=pure)
        except UnreadableProfile:
            continue  # a fault inside an event: the host's analysis reports it
        assert outline.num_events == profile.num_events
    assert refused > 50  # most cuts end inside a field


def test_unreadable_and_missing_files_give_facts_naming_them(tmp_path: Path) -> None:
    empty = tmp_path / "empty.xplane.pb"
    empty.write_bytes(b"")
    facts = host_facts_file(str(empty))
    assert not facts.readable and "empty.xplane.pb" in str(facts.failure)
    assert "0 bytes" in str(facts.failure)
    gone = host_facts_file(str(tmp_path / "gone.xplane.pb"))
    assert not gone.readable and "does not exist" in str(gone.failure)
    assert str(tmp_path) not in str(gone.failure)
