"""What a command needs to see wherever it lives (issues 11, 20): its installation, its
interpreter's, the packages its arguments name. The plan makes these readable even under
the host's ``/tmp``, never under a secret. And the symlinks on the way to what it is given
(:func:`called_links`): a ``HOME`` or a data folder reached through a link that lives in
the host's ``/tmp`` (issue 33).

Asked for every process a run starts (the agent, each terminal), so the arithmetic is on
strings: paths here are absolute and normalised (:func:`_clean`) before any is looked at,
so a parent is the text before the last slash. The pathlib form of the same walk (``parents``,
``parts``, a ``Path`` per candidate) built some 60 paths a launch.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from acp_bridge._os.fs.input_files import open_regular
from acp_bridge._os.fs.paths import path_of, real_path
from acp_bridge._os.sandbox.spec import HOST_TMP_DIRS

_PACKAGE_MARKERS = ("package.json", "node_modules", "pyproject.toml")
_INSTALL_DIRS = ("bin", "sbin", ".bin")
_PACKAGE_DEPTH = 6  # folders above a script looked at for a package marker


def _clean(path: str) -> str:
    """``str(Path(path).absolute())``, without building a ``Path`` for the usual, already
    clean absolute path (no doubled slash, no ``.`` component, no trailing slash)."""
    if (
        path.startswith("/")
        and "//" not in path
        and "/./" not in path
        and not path.endswith(("/", "/."))
    ) or path == "/":
        return path
    return str(Path(path).absolute())


def _parent(path: str) -> str:
    """``Path(path).parent`` of a clean absolute path (``/`` is its own parent)."""
    head = path.rpartition("/")[0]
    return head or "/"


def _parents(path: str) -> list[str]:
    """``Path(path).parents``, nearest first."""
    out = []
    while path != "/":
        path = _parent(path)
        out.append(path)
    return out


def _install_prefix(path: str) -> list[str]:
    """``path`` and the whole installation it belongs to: for ``…/bin/tool`` (or an npm
    ``…/node_modules/.bin/tool`` link) the prefix above (a venv, a node prefix: interpreter
    and libraries live beside ``bin``); for anything inside a ``node_modules`` tree the folder
    holding the outermost one (the npm prefix or project, every dependency in it); for
    anything inside a virtualenv (``pyvenv.cfg``) the venv."""
    out = [path]
    parent = _parent(path)
    if parent.rpartition("/")[2] in _INSTALL_DIRS:
        out.append(_parent(parent))
    names = path.split("/")[1:-1]  # the folders above the last name
    if "node_modules" in names:
        out.append("/" + "/".join(names[: names.index("node_modules")]))
    for folder in _parents(path):
        if os.path.isfile(folder.rstrip("/") + "/pyvenv.cfg"):  # noqa: PTH113 (strings)
            out.append(folder)
            break
    return out


def _package_root(path: str, home: str) -> list[str]:
    """For a script given by path (``node /x/dist/agent.js``), the nearest folder above it
    that is a package (``package.json``, ``node_modules``, ``pyproject.toml``): its
    dependencies are next to it. Never the home folder or ``/`` themselves."""
    for folder in _parents(path)[:_PACKAGE_DEPTH]:
        if folder in (home, "/"):
            return []
        if any(os.path.exists(f"{folder}/{m}") for m in _PACKAGE_MARKERS):  # noqa: PTH110
            return [folder]
    return []


def _command_paths(command: str, env: Mapping[str, str], cwd: str) -> list[str]:
    if "/" in command:
        found: str | None = command if command.startswith("/") else f"{cwd}/{command}"
    else:
        found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        return []  # the launch itself will report "command not found"
    link = _clean(found)  # the path it is called by (a .bin link), and its target
    real = real_path(link)
    out = _install_prefix(link) + _install_prefix(real)
    try:  # a script's interpreter (`#!/tmp/venv/bin/python`) is needed just as much
        fd = open_regular(real, "a command", sys.maxsize)  # never blocks on a FIFO
        with os.fdopen(fd, "rb") as f:
            first = f.readline(512)
    except OSError:
        return out
    if first.startswith(b"#!"):
        words = first[2:].decode("utf-8", "replace").split()
        if words and words[0].startswith("/"):
            interpreter = _clean(words[0])  # a venv's python is a link out of the venv
            out += _install_prefix(interpreter) + _install_prefix(real_path(interpreter))
    return out


def _under_host_tmp(entry: str) -> bool:
    return any(entry == tmp or entry.startswith(tmp + "/") for tmp in HOST_TMP_DIRS)


def needed_paths(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> tuple[Path, ...]:
    """What running ``argv`` needs to see wherever it lives, ``/tmp`` included: the command
    by the path it is called by and by its target, each with its whole installation
    (:func:`_install_prefix`) and its ``#!`` interpreter's; absolute paths among its
    arguments (``/x`` or ``--opt=/x``) that exist, with their installation or package
    folder; ``PATH`` entries under the host's tmp directories, this Python installation and
    the ``acp_bridge`` package (a nested bridge must start), and ``cwd``. Never unhides a
    secret: the plan drops these when they lie in a hidden path, unlike the explicit
    ``read`` list. Each path resolved (symlinks followed), once."""
    where = _clean(os.fspath(cwd))
    out: list[str] = [where]
    if argv:
        out += _command_paths(argv[0], env, where)
    home = env.get("HOME") or str(Path.home())
    home = _clean(home) if home.startswith("/") else home  # a relative one matches nothing
    for arg in argv[1:]:
        candidates = [arg]
        if arg.startswith("-") and "=" in arg:
            candidates.append(arg.split("=", 1)[1])
        for found in (_clean(c) for c in candidates if c.startswith("/")):
            if os.path.exists(found):  # noqa: PTH110 (strings: see the module docstring)
                out += _install_prefix(found) + _package_root(found, home)
    for entry in env.get("PATH", "").split(os.pathsep):
        if entry.startswith("/") and _under_host_tmp(entry):
            out += _install_prefix(_clean(entry))
    out += [_clean(sys.prefix), _clean(sys.base_prefix), _clean(sys.exec_prefix)]
    package = real_path(__file__)  # …/acp_bridge/_os/sandbox/needed.py
    out.append(_parent(_parent(_parent(_parent(package)))))  # the folder holding acp_bridge/
    resolved = dict.fromkeys(real_path(p) for p in dict.fromkeys(out))
    return tuple(path_of(p) for p in resolved)


Link = tuple[str, str, str]
"""A symlink on the way to a path a process is given: where it is, its target, and the path
reached through it (both resolved)."""
_TMP_PREFIXES = tuple(f"{tmp}/" for tmp in HOST_TMP_DIRS)
MAX_CALLED = 64
"""Paths of one launch looked at for links (an environment can be large)."""


def called_links(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, found: str | None = None
) -> tuple[Link, ...]:
    """The symlinks on the way to the paths a process is given under the host's tmp dirs, as
    it is given them: its command as ``found`` on ``PATH``, the absolute paths among its
    arguments, every ``PATH`` entry and the absolute paths in its environment (``HOME``,
    ``XDG_DATA_HOME``). The plan makes their targets visible at their resolved paths, but
    a link itself lies where the sandbox replaces the host's tmp dirs, and without it
    ``$HOME/.local/…`` or the managed install on ``PATH`` is not found (exit 127). Only
    paths written under a host tmp dir are looked at (elsewhere a link is visible as it is),
    and one with no link on the way costs one resolve."""
    where = _clean(os.fspath(cwd))
    given: list[str] = []
    if argv:
        command = found or argv[0]  # a bare name not found: nothing to look at
        if "/" in command:
            given.append(command if command.startswith("/") else f"{where}/{command}")
        for arg in argv[1:]:
            given.append(arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg)
    for name, value in env.items():
        given += value.split(os.pathsep) if name == "PATH" else [value]
    links: dict[tuple[str, str], Link] = {}  # a link once per path reached through it
    candidates = [g for g in given if g.startswith(_TMP_PREFIXES) and "\n" not in g]
    for path in candidates[:MAX_CALLED]:
        clean = _clean(path)
        if "/../" in clean or clean.endswith("/.."):
            continue  # `..` after a link is the link's parent's: not worth the walk
        reached = real_path(clean)
        if reached == clean:
            continue
        done = ""
        for name in clean.split("/")[1:]:
            here = f"{done}/{name}"
            if os.path.islink(here):  # noqa: PTH114 (strings: see the module docstring)
                target = real_path(here)
                links.setdefault((here, reached), (here, target, reached))
                done = target
            else:
                done = here
    return tuple(links.values())
