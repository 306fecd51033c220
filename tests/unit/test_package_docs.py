"""The docs cannot rot: generated references are current, the envelope reference names
every key and code, and every relative link points at a file that exists."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
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
