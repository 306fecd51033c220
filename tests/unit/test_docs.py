"""The docs cannot rot: generated references are current, the envelope reference names
every key and code, and every relative link points at a file that exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

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
