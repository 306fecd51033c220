"""The docs cannot rot: generated references are current, the envelope reference names
every key and code, every relative link points at a file that exists, and every module or
file a docstring or comment names exists."""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import subprocess
import sys
import tokenize
import tomllib
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Protocol

import pytest

import acp_bridge
from acp_bridge.envelope import Meta
from acp_bridge.errors import ErrorCode

ROOT = Path(__file__).resolve().parent.parent.parent
DOCS = ROOT / "docs"


def test_generated_references_are_current() -> None:
    check = subprocess.run(
        [sys.executable, str(DOCS / "generate_reference.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stderr


def _api_reference() -> ModuleType:
    """docs/api_reference.py, which sits beside the generator, not in a package."""
    spec = importlib.util.spec_from_file_location("api_reference", DOCS / "api_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_api_reference_files_every_public_name_once_with_its_own_docstring() -> None:
    assert _api_reference().filing_problems() == []


def test_an_unfiled_or_unexported_name_fails_the_api_reference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reference = _api_reference()
    exported = [name for name in acp_bridge.__all__ if name != "batch"]
    monkeypatch.setattr(acp_bridge, "__all__", [*exported, "brand_new"])
    assert reference.filing_problems() == [
        "brand_new: exported but filed in no section",
        "batch: filed but not exported",
    ]
    with pytest.raises(reference.FilingError, match="brand_new"):
        reference.api(str)


def test_an_inherited_docstring_is_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """A class without a docstring of its own would show its base's: a Protocol's is
    "Base class for protocol classes."."""

    class Undocumented(Protocol):
        name: str

    monkeypatch.setattr(acp_bridge, "Executor", Undocumented)
    assert _api_reference().filing_problems() == ["Executor: no docstring of its own"]


def test_the_envelope_reference_names_every_meta_key_and_error_code() -> None:
    text = (DOCS / "reference" / "envelope.md").read_text()
    missing = [f"meta.{k}" for k in Meta.model_fields if f"| `{k}` |" not in text]
    missing += [f"error_code {c.value}" for c in ErrorCode if f"| `{c.value}` |" not in text]
    assert missing == []


@pytest.mark.parametrize(
    "page", [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"], ids=lambda p: p.name
)
def test_relative_links_resolve(page: Path) -> None:
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        assert (page.parent / target).exists(), f"{page.name}: broken link {target}"


ARCHITECTURE = DOCS / "explanation" / "architecture.md"


def test_the_architecture_page_draws_the_layers_of_the_import_contract() -> None:
    """One source per fact: the layer list lives in pyproject.toml; the page repeats it."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in contracts["contracts"] if c["type"] == "layers")["layers"]
    page = ARCHITECTURE.read_text()
    drawn = page.split("<!-- layers:", 1)[1].split("```", 2)[1].strip().splitlines()
    assert drawn == layers


def test_every_module_and_test_the_architecture_page_names_exists() -> None:
    """The where-is-it table names modules (``_os/process/proc.py``) and tests
    (``unit/test_x.py``)."""
    page = ARCHITECTURE.read_text().split("## What moved where", 1)[0]
    named = set(re.findall(r"`([\w/]+\.py)`", page))
    assert len(named) > 150
    package, tests = ROOT / "acp_bridge", ROOT / "tests"
    missing = sorted(n for n in named if not any((d / n).exists() for d in (package, tests, ROOT)))
    assert missing == []


def test_every_module_has_a_row_in_the_architecture_page() -> None:
    page = ARCHITECTURE.read_text().split("## What moved where", 1)[0]
    package = ROOT / "acp_bridge"
    modules = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py", "_version.py")
    }
    assert sorted(m for m in modules if f"`{m}`" not in page) == []


PACKAGE = ROOT / "acp_bridge"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}


@cache
def _names_in(module: str) -> frozenset[str]:
    """Every name ``module`` binds anywhere (definitions, imports, assignments), and the string
    keys of its dicts (the lazily exported names of ``acp_bridge/__init__.py``)."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Dict):
            found.update(k.value for k in node.keys if isinstance(k, ast.Constant))
    return frozenset(n for n in found if isinstance(n, str))


def _resolves(target: str, *, module_only: bool) -> bool:
    """``acp_bridge.x.y`` is a module, or (unless ``module_only``) a name in one."""
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        module = ".".join(parts[:end])
        if module in MODULES:
            rest = parts[end:]
            return not rest if module_only else not rest or rest[0] in _names_in(module)
    return False


def _prose(path: Path) -> list[tuple[int, str]]:
    """The docstrings (a string standing as a statement) and comments of ``path``."""
    source = path.read_text()
    found = [
        (node.lineno, node.value.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    found += [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]
    return found


ROLE = re.compile(r":(mod|func|class|meth|attr|data|exc|obj):`~?([\w.]+)(?:\(\))?`")
FILE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.py)\b")
DOTTED = re.compile(r"(?<![\w.])(acp_bridge(?:\.\w+)+)")
PAGE = re.compile(r"(docs/[\w/.-]+\.md)(?:, ([^);:.]+))?")
"""A page of the docs, and maybe its section: ``(docs/explanation/acp.md, ending for sure)``."""


@cache
def _headings(page: Path) -> tuple[str, ...]:
    lines = page.read_text().splitlines()
    return tuple(
        line.lstrip("#").replace("`", "").strip().lower() for line in lines if line[:1] == "#"
    )


def _absolute(target: str, module: str) -> str:
    """A Sphinx-style relative target (``.x``, ``..x``) made absolute from ``module``."""
    if not target.startswith("."):
        return target
    dots = len(target) - len(target.lstrip("."))
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(dots - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{target[dots:]}".rstrip(".")


def _dangling(path: Path) -> list[str]:
    module = _module_name(path)
    where = path.relative_to(ROOT)
    found = []
    for line, text in _prose(path):
        for role, target in ROLE.findall(text):
            name = _absolute(target, module)
            if name.startswith("acp_bridge") and not _resolves(name, module_only=role == "mod"):
                found.append(f"{where}:{line}: :{role}:`{target}`")
        for name in FILE.findall(text):
            if not any((base / name).exists() for base in (path.parent, PACKAGE, ROOT)):
                found.append(f"{where}:{line}: {name}")
        for name in DOTTED.findall(text):
            if not _resolves(name, module_only=False):
                found.append(f"{where}:{line}: {name}")
        for page, section in PAGE.findall(" ".join(text.split())):
            if not (ROOT / page).is_file():
                found.append(f"{where}:{line}: {page}")
            elif section and not any(h.startswith(section.lower()) for h in _headings(ROOT / page)):
                found.append(f"{where}:{line}: {page}, {section}")
    return found


def test_every_module_and_file_the_code_names_exists() -> None:
    """A docstring or comment that names a module (``:mod:`.store.lanes```,
    ``acp_bridge._runs.caller.handle``), a name in one (``:func:`~.handle.wait_all```), a
    file (``_os/process/procgroup.py``, relative to its own folder, the package or the
    repository) or a page of the docs and its section (``docs/explanation/acp.md, tolerance``)
    names one that exists: a module moved or renamed takes its mentions along."""
    assert [d for path in sorted(PACKAGE.rglob("*.py")) for d in _dangling(path)] == []


def test_nothing_points_to_a_design_document_outside_the_repository() -> None:
    """The decisions the code relies on live in docs/explanation/; the code, the tests, the
    benchmarks and the docs point there, never to a design brief kept elsewhere."""
    outside = re.compile(r"\bDESIGN(?:\.md\b|'s\b|\s*§|:)")
    files = [ROOT / "README.md", ROOT / "pyproject.toml"]
    for folder in ("acp_bridge", "tests", "docs", "benchmarks", ".ci"):
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md", ".toml", "")]
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in files
        if path.is_file() and path != Path(__file__).resolve()
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if outside.search(line)
    ]
    assert found == []
