"""Every command in the README and the how-to guides runs as written (issue 20).

A shell block marked ``<!-- runnable -->`` on the line before it is run, whole, with
``bash -euo pipefail`` in a fresh folder (its own HOME and XDG folders, ``notes.txt``, a
``src/`` with a TODO, and the project's ``examples/``), against the demo agent and the
offline ``passthrough`` model, and must exit 0. A block marked
``<!-- runnable, continued -->`` goes on from the runnable block before it, in the same
folder (a guide's walk-through). Blocks that need a real agent, a model key or
a placeholder filled in are left unmarked.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Seconds each (timeouts waited out, hostile cases): out of the default run, in CI's.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "how-to").glob("*.md"))]
MARKER = "<!-- runnable -->"
CONTINUED = "<!-- runnable, continued -->"


def runnable_blocks(page: Path) -> list[tuple[int, str]]:
    """(line number, text) of each shell block marked runnable in ``page``; a continued
    block is added to the one before it."""
    lines = page.read_text().splitlines()
    blocks: list[tuple[int, str]] = []
    for index, line in enumerate(lines):
        if line.strip() not in (MARKER, CONTINUED):
            continue
        fence = lines[index + 1] if index + 1 < len(lines) else ""
        assert fence.strip() == "```sh", f"{page.name}:{index + 1}: {line} must precede ```sh"
        end = lines.index("```", index + 2)
        text = "\n".join(lines[index + 2 : end])
        if line.strip() == CONTINUED:
            assert blocks, f"{page.name}:{index + 1}: {CONTINUED} with no runnable block before"
            first, before = blocks.pop()
            text = f"{before}\n{text}"
            index = first - 3
        blocks.append((index + 3, text))
    return blocks


BLOCKS = [
    pytest.param(page, text, id=f"{page.relative_to(ROOT)}:{line}")
    for page in PAGES
    for line, text in runnable_blocks(page)
]


def scene(root: Path) -> tuple[Path, dict[str, str]]:
    """The folder a block runs in, and its environment."""
    work = root / "work"
    (work / "src").mkdir(parents=True)
    (work / "notes.txt").write_text("the notes\n")
    (work / "src" / "app.py").write_text("# TODO: everything\n")
    (work / "examples").symlink_to(ROOT / "examples")
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(root / "home"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
        **{f"XDG_{k}_HOME": str(root / k.lower()) for k in ("STATE", "CONFIG", "DATA", "CACHE")},
        "ACP_BRIDGE_DEMO_STATE": str(root / "demo-memory"),
        # who commits, as on any machine where git is set up (guides commit in a new repo)
        **{
            f"GIT_{who}_{what}": value
            for who in ("AUTHOR", "COMMITTER")
            for what, value in (("NAME", "Docs Reader"), ("EMAIL", "reader@example.invalid"))
        },
        **{k: v for k, v in os.environ.items() if k == "ACP_BRIDGE_SANDBOX"},
    }
    return work, env


@pytest.mark.parametrize(("page", "block"), BLOCKS)
def test_a_runnable_block_runs_as_written(page: Path, block: str, tmp_path: Path) -> None:
    if "jq " in block and shutil.which("jq") is None:
        pytest.skip("the block uses jq, which is not installed here")
    work, env = scene(tmp_path)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, (
        f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )


def test_the_readme_and_each_guide_with_commands_have_runnable_blocks() -> None:
    marked = {page.name: len(runnable_blocks(page)) for page in PAGES}
    assert marked["README.md"] >= 5, marked
    for page in PAGES:
        if re.search(r"^```sh$", page.read_text(), re.MULTILINE) and page.name != "mcp.md":
            assert marked[page.name] >= 1, f"{page.name} has shell blocks, none marked runnable"
