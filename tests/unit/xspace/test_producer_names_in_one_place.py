"""Producers' stat names are spelled in one place: tb_profile_plugin/xspace/producers/.

Every other module reads a stat through a name producers defines (`GROUP_ID_STAT`, ...) or
through the canonical columns; a string literal equal to a producer's stat name anywhere else
fails this test, with its file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tb_profile_plugin.xspace import producers

PACKAGE = Path(producers.__file__).resolve().parents[2]  # tb_profile_plugin/

#: The names the issue found escaping producers: checked whatever producers lists, so that the
#: test cannot pass by a shorter `STAT_NAMES`.
ISSUE_NAMES = frozenset({
    "group_id", "step_name", "tf_op", "kernel_details", "program_id", "hlo_op",
    "correlation_id", "device_duration_ps",
})
#: Stat names that are also everyday words of this code base (`name` is every table's field):
#: producers reads them through its own constant (`JAX_OP_NAME_STAT`), but a literal equal to
#: one says nothing.
EVERYDAY_WORDS = frozenset({"name"})
#: Views whose documents carry a field named as the reference's view names it, which is also a
#: producer's stat name: the document's words, not a stat read.
DOCUMENT_FIELDS = frozenset({
    ("tools/analysis_views.py", "hlo_op"),
    ("tools/kernel_stats.py", "hlo_op"),
    ("tools/tensorflow_stats.py", "hlo_op"),
    ("tools/memory_profile.py", "tf_op"),
})


def _checked_modules(package: Path) -> list[Path]:
    """Every module of the package but the producers modules and generated protobuf code."""
    out = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).parts
        if parts[:2] in (("xspace", "producers"), ("xspace", "pb")):
            continue
        if parts[:2] == ("xspace", "producers.py"):
            continue
        out.append(path)
    return out


def stat_name_literals(package: Path, names: frozenset[str]) -> list[str]:
    """`file:line: 'name'` for every string literal of the checked modules equal to one of
    `names`, but the views' document fields (`DOCUMENT_FIELDS`)."""
    found: list[tuple[str, int, str]] = []
    for path in _checked_modules(package):
        relative = path.relative_to(package).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            if node.value in names and (relative, node.value) not in DOCUMENT_FIELDS:
                found.append((relative, node.lineno, node.value))
    return [f"tb_profile_plugin/{path}:{line}: {name!r}" for path, line, name in sorted(found)]


def checked_names() -> frozenset[str]:
    return (frozenset(producers.STAT_NAMES) | ISSUE_NAMES) - EVERYDAY_WORDS


def test_producers_lists_every_name_the_issue_names() -> None:
    assert ISSUE_NAMES <= set(producers.STAT_NAMES)
    assert len(set(producers.STAT_NAMES)) == len(producers.STAT_NAMES)
    assert all(isinstance(name, str) and name for name in producers.STAT_NAMES)


def test_no_module_but_producers_spells_a_producer_stat_name() -> None:
    modules = _checked_modules(PACKAGE)
    relative = {path.relative_to(PACKAGE).as_posix() for path in modules}
    # Not vacuous: the modules that read these stats are among those checked.
    assert {"analysis/events/forest.py", "analysis/ops/kernel_stats.py", "trace/details.py",
            "trace/derived.py", "analysis/steps/step_db.py"} <= relative
    assert not any(name.startswith(("xspace/producers", "xspace/pb/")) for name in relative)
    found = stat_name_literals(PACKAGE, checked_names())
    assert not found, "producers' stat names spelled outside xspace/producers/ " \
                      "(use the name producers defines):\n" + "\n".join(found)


def test_the_check_finds_a_spelled_name(tmp_path: Path) -> None:
    """The check itself: a literal stat name in a module is found, with its file and line."""
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "reader.py").write_text(
        'def read(table):\n    return table.int_stat("group_id")\n')
    (tmp_path / "xspace" / "producers").mkdir(parents=True)
    (tmp_path / "xspace" / "producers" / "names.py").write_text('GROUP_ID_STAT = "group_id"\n')
    assert stat_name_literals(tmp_path, checked_names()) == [
        "tb_profile_plugin/analysis/reader.py:2: 'group_id'"]
