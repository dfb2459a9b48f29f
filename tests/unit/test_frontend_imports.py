"""The frontend's modules import one another without a circle.

An import circle (registry.ts imports a view that imports registry.ts back) makes a module's
value depend on the order the bundle evaluates them in, and keeps a module from being read on
its own. This test reads every .ts/.tsx file under frontend/src, collects its relative imports
(`import ... from`, `import type ... from`, `import "./x"`, `export ... from` and dynamic
`import("./x")`), and fails naming the files of every circle it finds.

Run as a script (`python tests/unit/test_frontend_imports.py`) it prints the circles, if any.
"""

from __future__ import annotations

import re
from collections import deque
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "frontend" / "src"

# Comments and string literals, matched together so that a comment's text is dropped (an
# example `import("./x")` in a doc comment is not an import) while a string holding "//" or
# "/*" (a URL) is kept whole and does not start a comment.
_COMMENT_OR_STRING = re.compile(
    r"""
      (?P<comment> //[^\n]* | /\*.*?\*/ )
    | "(?:\\.|[^"\\\n])*"
    | '(?:\\.|[^'\\\n])*'
    | `(?:\\.|[^`\\])*`
    """,
    re.DOTALL | re.VERBOSE,
)

# The module specifier of a static import or re-export: `from "./x"` ends every
# `import ... from` / `import type ... from` / `export ... from` statement, however many lines
# its braces span; `import "./x"` is a bare import run for its side effects.
_STATIC = re.compile(r"""\b(?:from|import)\s*(["'])(?P<spec>[^"'\n]+)\1""")
# A dynamic import: `import("./x")`.
_DYNAMIC = re.compile(r"""\bimport\s*\(\s*(["'])(?P<spec>[^"'\n]+)\1\s*\)""")

_SOURCE_SUFFIXES = (".ts", ".tsx")


def _drop_comments(text: str) -> str:
    return _COMMENT_OR_STRING.sub(lambda m: " " if m.group("comment") else m.group(0), text)


def relative_specifiers(text: str) -> list[str]:
    """The relative module specifiers ("./x", "../y/z") a module's source imports."""
    code = _drop_comments(text)
    specs = [m.group("spec") for m in _STATIC.finditer(code)]
    specs += [m.group("spec") for m in _DYNAMIC.finditer(code)]
    return [spec for spec in specs if spec.startswith(".")]


def resolve(importer: Path, spec: str) -> Path | None:
    """The .ts/.tsx file a relative specifier names, as the bundler resolves it.

    None for an import of another kind of file ("./styles.css"). "./x.js" names x.ts or x.tsx
    (TypeScript's convention for emitted paths), and a folder names its index module.
    """
    base = (importer.parent / spec).resolve()
    stem = base.with_suffix("") if base.suffix in (".js", ".jsx") else base
    candidates = [base] if base.suffix in _SOURCE_SUFFIXES else []
    candidates += [stem.with_name(stem.name + suffix) for suffix in _SOURCE_SUFFIXES]
    candidates += [stem / f"index{suffix}" for suffix in _SOURCE_SUFFIXES]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    if base.suffix and base.suffix not in (".js", ".jsx", *_SOURCE_SUFFIXES):
        return None  # a stylesheet or other asset: not a module of the graph
    raise AssertionError(f"{importer}: cannot resolve import {spec!r}")


def import_graph(src: Path) -> dict[Path, set[Path]]:
    """Each .ts/.tsx module under `src` mapped to the modules it imports (relatively)."""
    files = sorted(p for p in src.rglob("*") if p.suffix in _SOURCE_SUFFIXES and p.is_file())
    graph: dict[Path, set[Path]] = {}
    for path in files:
        targets = (resolve(path, spec) for spec in relative_specifiers(path.read_text("utf-8")))
        graph[path.resolve()] = {target for target in targets if target is not None}
    return graph


def _reachable(graph: dict[Path, set[Path]], start: Path) -> set[Path]:
    """Every module reachable from `start` by one or more imports (`start` only via a circle)."""
    seen: set[Path] = set()
    todo = deque(graph.get(start, ()))
    while todo:
        node = todo.popleft()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def _shortest_circle(graph: dict[Path, set[Path]], start: Path) -> list[Path]:
    """One shortest chain of imports from `start` back to itself (breadth-first)."""
    parent: dict[Path, Path] = {}
    todo = deque([start])
    while todo:
        node = todo.popleft()
        for target in sorted(graph.get(node, ())):
            if target == start:
                chain = [node]
                while chain[-1] != start:
                    chain.append(parent[chain[-1]])
                return [*reversed(chain), start]
            if target not in parent:
                parent[target] = node
                todo.append(target)
    raise AssertionError(f"{start} is on no circle")


def import_circles(graph: dict[Path, set[Path]]) -> list[list[list[Path]]]:
    """The graph's circles, grouped by strongly connected component: the modules that each
    reach the other (or a module importing itself). Each group holds chains of imports from a
    module back to itself, enough of them that every module of the component is on one.

    Comparing the reachable sets of a few dozen modules is fast enough, and plainer than
    Tarjan's algorithm.
    """
    reach = {node: _reachable(graph, node) for node in graph}
    groups: list[list[list[Path]]] = []
    placed: set[Path] = set()
    for node in sorted(graph):
        if node in placed or node not in reach[node]:
            continue
        component = {other for other in reach[node] if node in reach[other]}
        placed |= component
        chains: list[list[Path]] = []
        for member in sorted(component):
            if not any(member in chain for chain in chains):
                chains.append(_shortest_circle(graph, member))
        groups.append(chains)
    return groups


def _describe(groups: list[list[list[Path]]], src: Path) -> str:
    def name(path: Path) -> str:
        return str(path.relative_to(src))

    lines = []
    for chains in groups:
        members = sorted({name(p) for chain in chains for p in chain})
        lines.append(f"circle among {', '.join(members)}:")
        lines += ["  " + " -> ".join(name(p) for p in chain) for chain in chains]
    return "\n".join(lines)


def test_frontend_has_no_import_circle() -> None:
    graph = import_graph(SRC)
    circles = import_circles(graph)
    assert not circles, "import circles in frontend/src:\n" + _describe(circles, SRC.resolve())


def test_graph_sees_the_imports() -> None:
    # A parser that missed imports would find no circle in anything; the app's entry point
    # must reach the views, including the trace viewer in its subfolder.
    graph = import_graph(SRC)
    reached = _reachable(graph, (SRC / "index.tsx").resolve())
    assert (SRC / "views" / "registry.ts").resolve() in reached
    assert (SRC / "views" / "trace_viewer" / "view.tsx").resolve() in reached


def test_circles_are_found(tmp_path: Path) -> None:
    # Every kind of import is an arrow of the graph, so each closes a circle here.
    (tmp_path / "sub").mkdir()
    files = {
        "a.ts": 'import type { B } from "./b";\n// import { Z } from "./z";\n',
        "b.tsx": 'export {\n  c,\n} from "./sub/c.js";\nconst url = "http://x/*";\n',
        "sub/c.ts": 'export const c = () => import("../d");\n',
        "d.ts": 'import "./e";\nimport "./styles.css";\n',
        "e.ts": 'export * from "./a";\n',
        "f.ts": 'import { a } from "./a";\nimport "./f";\n',
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, "utf-8")
    circles = import_circles(import_graph(tmp_path))
    assert _describe(circles, tmp_path.resolve()).splitlines() == [
        "circle among a.ts, b.tsx, d.ts, e.ts, sub/c.ts:",
        "  a.ts -> b.tsx -> sub/c.ts -> d.ts -> e.ts -> a.ts",
        "circle among f.ts:",
        "  f.ts -> f.ts",
    ]


if __name__ == "__main__":
    found = import_circles(import_graph(SRC))
    print(_describe(found, SRC.resolve()) if found else "no import circle")
