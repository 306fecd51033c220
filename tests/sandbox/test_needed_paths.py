"""What a command needs to see: the string arithmetic of ``needed.py`` gives the answer the
pathlib form gives (kept here as the meaning), for commands by name, by path and by link,
venvs, npm trees, ``#!`` scripts, arguments naming files, and odd spellings."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_bridge._os.fs.paths import real_path
from acp_bridge._os.sandbox import needed
from acp_bridge._os.sandbox.needed import needed_paths
from acp_bridge._os.sandbox.spec import HOST_TMP_DIRS

# --- the pathlib form (the code before the string arithmetic), the meaning it keeps --------


def _prefix(path: Path) -> list[Path]:
    out = [path]
    if path.parent.name in ("bin", "sbin", ".bin"):
        out.append(path.parent.parent)
    parts = path.parts
    if "node_modules" in parts[:-1]:
        out.append(Path(*parts[: parts.index("node_modules")]))
    venv = next((p for p in path.parents if (p / "pyvenv.cfg").is_file()), None)
    return out if venv is None else [*out, venv]


def _package(path: Path, home: Path) -> list[Path]:
    for parent in list(path.parents)[:6]:
        if parent in (home, Path("/")):
            return []
        if any((parent / m).exists() for m in ("package.json", "node_modules", "pyproject.toml")):
            return [parent]
    return []


def _command(command: str, env: Mapping[str, str], cwd: Path) -> list[Path]:
    found = str(cwd / command) if "/" in command else shutil.which(command, path=env["PATH"])
    if found is None:
        return []
    link = Path(found).absolute()
    real = Path(real_path(link))
    out = _prefix(link) + _prefix(real)
    try:
        with real.open("rb") as f:
            first = f.readline(512)
    except OSError:
        return out
    if first.startswith(b"#!"):
        words = first[2:].decode("utf-8", "replace").split()
        if words and words[0].startswith("/"):
            interpreter = Path(words[0])
            out += _prefix(interpreter) + _prefix(Path(real_path(interpreter)))
    return out


def pathlib_needed(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> tuple[Path, ...]:
    out: list[Path] = [cwd]
    if argv:
        out += _command(argv[0], env, cwd)
    home = Path(env.get("HOME") or Path.home())
    for arg in argv[1:]:
        candidates = [arg]
        if arg.startswith("-") and "=" in arg:
            candidates.append(arg.split("=", 1)[1])
        for found in (Path(c) for c in candidates if c.startswith("/") and Path(c).exists()):
            out += _prefix(found) + _package(found, home)
    for entry in env["PATH"].split(os.pathsep):
        if entry.startswith("/") and any(
            entry == t or entry.startswith(t + "/") for t in HOST_TMP_DIRS
        ):
            out += _prefix(Path(entry))
    out += [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)]
    out.append(Path(real_path(needed.__file__)).parents[3])
    return tuple(dict.fromkeys(Path(real_path(p)) for p in dict.fromkeys(out)))


# --- a tree of installations ---------------------------------------------------------------


@pytest.fixture(scope="module")
def installs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("installs")
    venv = root / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin/python").symlink_to(sys.executable)
    (venv / "bin/tool").write_text(f"#!{venv}/bin/python\n")
    npm = root / "prefix"
    (npm / "lib/node_modules/agent/dist").mkdir(parents=True)
    (npm / "lib/node_modules/agent/package.json").write_text("{}")
    (npm / "lib/node_modules/agent/dist/cli.js").write_text("#!/usr/bin/env node\n")
    (npm / "bin").mkdir()
    (npm / "bin/agent").symlink_to("../lib/node_modules/agent/dist/cli.js")
    (root / "proj/src").mkdir(parents=True)
    (root / "proj/pyproject.toml").write_text("")
    (root / "proj/src/main.py").write_text("")
    (root / "link").symlink_to(npm)
    for path in (venv / "bin/tool", npm / "lib/node_modules/agent/dist/cli.js"):
        path.chmod(0o755)
    return root


_words = st.sampled_from(
    [
        "venv/bin/tool",
        "venv/bin/python",
        "prefix/bin/agent",
        "link/bin/agent",
        "prefix/lib/node_modules/agent/dist/cli.js",
        "proj/src/main.py",
        "proj//src/./main.py",
        "proj/src/",
        "missing/x",
    ]
)
_argv = st.lists(
    st.tuples(st.sampled_from(["", "--opt=", "-x=", "rel/"]), _words), min_size=1, max_size=4
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_argv, st.sampled_from(["tool", "python3", "sh", "nothere", "venv/bin/tool"]))
def test_needed_paths_is_the_pathlib_walk(
    installs: Path, words: list[tuple[str, str]], command: str
) -> None:
    argv = [command, *(f"{flag}{installs}/{word}" for flag, word in words)]
    if command == "venv/bin/tool":
        argv[0] = str(installs / command)
    env = {
        "PATH": f"{installs}/venv/bin:{installs}/prefix/bin:/usr/bin:/bin",
        "HOME": str(installs / "proj"),
    }
    cwd = installs / "proj"
    assert needed_paths(argv, env, cwd) == pathlib_needed(argv, env, cwd)
