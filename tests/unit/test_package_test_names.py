"""Unit tests are named after what they test, one convention: ``test_<path>[_<aspect>].py``,
where ``<path>`` is the module's or package's path inside ``acp_bridge`` with the leading
underscores dropped, joined by ``_`` (``_acp/wire/schema.py`` → ``test_acp_wire_schema.py``,
``config/`` → ``test_config.py``), ``_<aspect>`` telling a second file of one module apart
(``test_os_buffers_properties.py``), and ``package`` the package as a whole
(``test_package_layout.py``). A file so named imports what it names (or the public package
in front of it), or names it (a module run as a process): a name left behind by a move fails
here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parent
PACKAGE = UNIT.parent.parent / "acp_bridge"
WHOLE_PACKAGE = "package"
"""The test name of ``acp_bridge`` itself."""


def _modules() -> dict[str, str]:
    """Every module's and package's test name → its dotted name."""
    found = {WHOLE_PACKAGE: "acp_bridge"}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        parts = (
            relative.parent.parts if path.name == "__init__.py" else relative.with_suffix("").parts
        )
        if not parts or "__pycache__" in parts:
            continue
        name = "_".join(part.lstrip("_") for part in parts)
        assert name not in found, f"{relative} and {found[name]} have one test name: {name}"
        found[name] = ".".join(("acp_bridge", *parts))
    return found


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """The modules ``path`` imports, and for ``from M import N`` also ``M.N`` (N may be a
    submodule)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def named_after(test_file: Path) -> tuple[str, str] | None:
    """What ``test_file`` is named after (the longest test name that fits) and the aspect
    after it ("" for none), or None."""
    stem = test_file.stem.removeprefix("test_")
    fitting = [name for name in MODULES if stem == name or stem.startswith(f"{name}_")]
    if not fitting:
        return None
    tested = max(fitting, key=len)
    return tested, stem.removeprefix(tested).removeprefix("_")


def naming_problem(test_file: Path) -> str | None:
    """Why ``test_file``'s name breaks the convention (None: it keeps it)."""
    found = named_after(test_file)
    if found is None:
        return f"{test_file.name} names no module or package of acp_bridge"
    tested, aspect = found
    module = MODULES[tested]
    inside = [name for name, dotted in MODULES.items() if dotted.startswith(f"{module}.")]
    for name in inside:  # an aspect that is a module of the package: named by half its path
        last = MODULES[name].rsplit(".", 1)[-1].lstrip("_")
        if aspect == last or aspect.startswith(f"{last}_"):
            return f"{test_file.name}: name it after {MODULES[name]} (test_{name}.py)"
    if tested == WHOLE_PACKAGE:
        return None
    imported = [name for name in _imports(test_file) if name.startswith("acp_bridge.")]
    if any(
        name == module or name.startswith(f"{module}.") or module.startswith(f"{name}.")
        for name in imported
    ):
        return None
    # Run as a process (``python -m``) or reached through its users: named in the text.
    text, path = test_file.read_text(), module.removeprefix("acp_bridge.").replace(".", "/")
    if module in text or f"{path}.py" in text or f"{path}/" in text:
        return None
    return f"{test_file.name} is named after {module} but neither imports nor names it"


@pytest.mark.parametrize("test_file", sorted(UNIT.glob("test_*.py")), ids=lambda p: p.name)
def test_each_unit_test_is_named_after_the_module_it_tests(test_file: Path) -> None:
    assert naming_problem(test_file) is None


@pytest.mark.parametrize(
    ("old_name", "problem"),
    [
        ("test_acp_schema.py", "name it after acp_bridge._acp.wire.schema"),
        ("test_entries_doctor.py", "named after acp_bridge._entries but neither"),
        ("test_field_defaults.py", "names no module or package"),
    ],
)
def test_a_name_left_behind_by_a_move_is_caught(
    old_name: str, problem: str, tmp_path: Path
) -> None:
    """Names these files had before the regroup moved their modules."""
    test_file = tmp_path / old_name
    test_file.write_text("from acp_bridge._agents.doctor import diagnose\n")
    assert problem in (naming_problem(test_file) or "")
