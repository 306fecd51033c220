"""The package's layout holds: rooms a newcomer can take in, one name per module, no module
importing itself in a circle, nothing private loose at the root.

The import contracts in pyproject.toml hold the layers and the room-level cycles (``lint-imports``,
run by CI, leaves out imports made only for type checkers). These read the code itself, every
import included, so a cycle that exists only for the type checker is found too.
"""

from __future__ import annotations

import ast
import pkgutil
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent.parent / "acp_bridge"
MAX_ROOM = 12
"""Most Python files one folder of the package holds (its ``__init__.py`` counted)."""
ROOT_FACES = {"__init__.py", "__main__.py", "_version.py", "envelope.py", "errors.py", "events.py"}
"""The modules at the package's root: its public faces, and the version the build reads."""


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``path`` imports, wherever the import is (functions and
    ``TYPE_CHECKING`` blocks included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("acp_bridge")
        ):
            module = str(node.module)
            for alias in node.names:
                name = f"{module}.{alias.name}"
                out.add(name if name in modules else module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("acp_bridge"))
    return {name for name in out if name in modules}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for node in graph:
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_no_module_imports_itself_in_a_circle() -> None:
    modules = _modules()
    graph = {
        name: {m for m in _imports(path, modules) if m != name and m != "acp_bridge"}
        for name, path in modules.items()
    }
    # The package itself imports nothing but its version at run time; its lazily loaded
    # exports are named for type checkers only, so it is left out of the graph.
    graph.pop("acp_bridge")
    assert _cycles(graph) == []


def test_every_room_holds_at_most_twelve_files() -> None:
    rooms: dict[str, int] = defaultdict(int)
    for path in PACKAGE.rglob("*.py"):
        rooms[str(path.parent.relative_to(PACKAGE.parent))] += 1
    assert {room: n for room, n in rooms.items() if n > MAX_ROOM} == {}


def test_no_two_modules_share_a_name_and_none_is_named_like_a_room() -> None:
    """Named without their leading underscore: ``cli/_runs.py`` and ``_runs/`` would be two
    things called "runs"."""
    by_name: dict[str, list[str]] = defaultdict(list)
    rooms = set()
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        rooms.update(part.lstrip("_") for part in relative.parts[:-1])
        if path.name not in ("__init__.py", "__main__.py"):
            by_name[path.stem.lstrip("_")].append(str(relative))
    assert {n: paths for n, paths in by_name.items() if len(paths) > 1} == {}
    assert sorted(n for n in by_name if n in rooms) == []


def test_only_the_public_faces_sit_at_the_root() -> None:
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == sorted(ROOT_FACES)


def test_no_submodule_is_named_like_an_export() -> None:
    """Importing a direct submodule sets an attribute of the package, so one named like an
    export would replace it. Read without importing anything; the whole package imported in
    two orders, every export looked at after, is tests/process/test_agent_io.py (slow)."""
    import acp_bridge

    submodules = {module.name for module in pkgutil.iter_modules(acp_bridge.__path__)}
    assert sorted(submodules & set(acp_bridge.__all__)) == []
