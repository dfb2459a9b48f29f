"""The package's structure (docs/architecture.md): no import circle, arrows between the
analysis domains one way, and no module longer than a newcomer can read.

The import graph is read from the source with `ast`, every import counted wherever it stands
(a module's top, inside a function, under TYPE_CHECKING): an import inside a function that
closes a circle is still a circle, only one that fails later.
"""

from __future__ import annotations

import ast
import collections
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tb_profile_plugin"
#: Generated protobuf code is not ours to cut.
GENERATED = PACKAGE / "xspace" / "pb"
MAX_MODULE_LINES = 700
#: The compiled accelerators' C sources and headers: one idea a source too (an extension built
#: from several, sharing a private header, where one outgrew this).
MAX_C_SOURCE_LINES = 750
SETUP = PACKAGE.parent / "setup.py"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if GENERATED in path.parents:
            continue
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """{module: the package's modules it imports}, `from pkg import name` resolved to the
    submodule `pkg.name` where there is one, else to `pkg`."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules
                           else source for alias in node.names]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def collapsed(graph: dict[str, set[str]], node_of: dict[str, str]) -> dict[str, set[str]]:
    """The graph between groups of modules (`node_of`: module -> group; others dropped)."""
    groups: dict[str, set[str]] = collections.defaultdict(set)
    for source, targets in graph.items():
        if source not in node_of:
            continue
        groups[node_of[source]].update(
            node_of[t] for t in targets if t in node_of and node_of[t] != node_of[source])
    return dict(groups)


def _describe(components: Iterable[list[str]]) -> str:
    return "; ".join(" <-> ".join(c) for c in components)


def test_the_graph_reader_finds_a_circle_and_resolves_imports() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    modules = _modules()
    edges = import_graph(modules)
    # Imports at a module's top and inside functions are both read.
    assert "tb_profile_plugin.tools.view" in edges["tb_profile_plugin.tools.registry"]
    assert "tb_profile_plugin.tools.overview_page" in edges["tb_profile_plugin.tools.registry"]
    assert len(modules) > 100


def test_no_import_circle_in_the_package() -> None:
    found = circles(import_graph(_modules()))
    assert not found, f"import circles: {_describe(found)}"


def test_the_analysis_domains_import_one_way() -> None:
    """analysis/<domain>/ packages (and analysis/evidence.py) form no circle between them:
    a newcomer can read them bottom-up (events, steps, ops, ..., advice)."""
    prefix = "tb_profile_plugin.analysis."
    node_of = {name: name[len(prefix):].split(".")[0]
               for name in _modules() if name.startswith(prefix)}
    domains = set(node_of.values())
    assert {"events", "steps", "ops", "tf_data", "memory", "hosts", "advice"} <= domains
    found = circles(collapsed(import_graph(_modules()), node_of))
    assert not found, f"analysis domains in a circle: {_describe(found)}"


def test_the_package_parts_import_one_way() -> None:
    """Between the package's top-level parts (analysis/, trace/, tools/, xspace/, commands/,
    plugin.py, ...) arrows run one way too: e.g. the analyses never import the trace viewer's
    modules (the compiled nesting pass both use lives in analysis/events/)."""
    prefix = "tb_profile_plugin."
    node_of = {name: name[len(prefix):].split(".")[0]
               for name in _modules() if name.startswith(prefix)}
    found = circles(collapsed(import_graph(_modules()), node_of))
    assert not found, f"package parts in a circle: {_describe(found)}"


def test_analysis_has_no_loose_modules() -> None:
    """Every analysis module lives in its domain's folder (evidence.py, the one type both
    advice/ and tf_data/ give, excepted)."""
    loose = sorted(p.name for p in (PACKAGE / "analysis").glob("*.py")
                   if p.name not in {"__init__.py", "evidence.py"})
    assert not loose, f"analysis/ modules outside a domain folder: {loose}"
    for folder in (PACKAGE / "analysis").iterdir():
        if folder.is_dir() and folder.name != "__pycache__":
            init = folder / "__init__.py"
            assert init.exists() and ast.get_docstring(ast.parse(init.read_text())), (
                f"analysis/{folder.name}/__init__.py must say what the domain computes")


def test_no_module_over_700_lines() -> None:
    long = {str(path.relative_to(PACKAGE)): n for path in _modules().values()
            if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def _c_sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*") if p.suffix in {".c", ".h"})


def test_no_c_source_over_750_lines() -> None:
    long = {str(path.relative_to(PACKAGE)): n for path in _c_sources()
            if (n := len(path.read_text().splitlines())) > MAX_C_SOURCE_LINES}
    assert not long, f"C sources over {MAX_C_SOURCE_LINES} lines: {long}"


def test_setup_builds_every_c_source() -> None:
    """Every C source (and header) under the package is named in setup.py: a source split off
    an extension and not listed there leaves the extension unbuilt (they are optional: the
    install would go on without it, on the numpy paths), a header not listed in `depends`
    leaves the sdist without it."""
    setup = SETUP.read_text()
    sources = _c_sources()
    assert len(sources) >= 4
    missing = [str(p.relative_to(PACKAGE.parent)) for p in sources
               if f'"{p.relative_to(PACKAGE.parent).as_posix()}"' not in setup]
    assert not missing, f"C sources setup.py does not name: {missing}"
