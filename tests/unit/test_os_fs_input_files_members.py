"""Every kind of named input the bridge reads, through its own entry point, against every
member of the hostile class (issue 37, class 2): a FIFO (opening it would block), a device
that never ends (``/dev/zero``, ``/dev/urandom``), a file of gigabytes (sparse: no disk),
JSON nested 100 000 deep, and raw line separators inside a JSON string (valid JSON). Each
is refused with an error naming the file — or, for the bridge's own records (an install
stamp, a parse cache entry), taken as absent — without blocking, reading it whole or
raising anything but the kind's own error; the separators are read as what they are.

A reader that bypassed the one bounded reader would block on the FIFO (the test's timeout
fails it) or read the device until memory runs out."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from acp_bridge._acp import agent_executable
from acp_bridge._agents.package_managers import _lock_lines
from acp_bridge._agents.registry import sources as registry_sources
from acp_bridge._batch.results_file import _read as read_results
from acp_bridge._compare.comparison import read_patch
from acp_bridge._mcp.transport.listen import read_token
from acp_bridge._os.fs import input_files
from acp_bridge._output_schema.structured_output import SchemaRegistry
from acp_bridge.cli._batch_commands.batch_command import read_tasks
from acp_bridge.config import load_config
from acp_bridge.config._catalog import _load_profile_dir
from acp_bridge.config._yaml import cache as yamlcache
from acp_bridge.envelope import done
from acp_bridge.errors import BridgeError
from acp_bridge.smoke._expect import _file_failures, _schema_failures
from acp_bridge.smoke._suite import load_suite

pytestmark = pytest.mark.timeout(60)  # a reader that blocks on a FIFO fails, never hangs

SEPARATOR = "a\u2028b\u2029c\x85d"
"""Raw inside a JSON string: valid JSON, and line breaks to ``str.splitlines``."""
DEEP = 100_000


def said(read: Callable[[], object]) -> str:
    """What reading said: the error's text (any error the kind raises), else the value."""
    try:
        return repr(read())
    except (BridgeError, OSError, ValueError) as exc:
        return str(exc)


@dataclass(frozen=True)
class Kind:
    file: str
    """The name the input has in the test's folder."""
    read: Callable[[Path], str]
    """What reading the input at this path said (see :func:`said`)."""
    json_text: Callable[[str], str] | None = None
    """A valid input holding the JSON value given as text (None: not JSON)."""
    names_it: bool = True
    """A refusal names the file (False: the bridge's own record, taken as absent)."""
    skips_lines: bool = False
    """A line that is no record is skipped, as a torn last line is (a journal)."""


def _envelope(value: str) -> str:
    data = done("x").to_dict()
    data["meta"]["batch"] = {"key": "k", "index": 0, "node": "n", "attempts": 1}
    text = json.dumps(data, ensure_ascii=False)
    return text[:-1] + f', "extra": {value}}}\n'


def _stamp(path: Path) -> str:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(agent_executable, "install_dir", lambda _spec: path.parent)
        return said(lambda: agent_executable.installed(None))  # type: ignore[arg-type]


def _cache(path: Path) -> str:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(yamlcache, "_entry", lambda _path: path)
        return said(lambda: yamlcache.load(path.parent / "config.yaml", b"{}"))


def _profile(path: Path) -> str:
    layers, unreadable = _load_profile_dir(path.parent, "profiles dir")
    return "; ".join(str(problem) for problem in unreadable.get(path, [])) or repr(layers)


def _schema(path: Path) -> str:
    return said(lambda: SchemaRegistry({"answer": path}).schema("answer"))


KINDS: dict[str, Kind] = {
    "tasks file": Kind(
        "tasks.jsonl",
        lambda p: said(lambda: read_tasks(p)),
        lambda v: f'{{"entry": "acp_spawn", "agent": "demo", "task": {v}}}\n',
    ),
    "results file": Kind(
        "out.jsonl", lambda p: said(lambda: read_results(p, tolerant=False)), _envelope
    ),
    "results journal": Kind(
        "out.jsonl.journal",
        lambda p: said(lambda: read_results(p, tolerant=True)),
        _envelope,
        skips_lines=True,
    ),
    "config": Kind("config.yaml", lambda p: said(lambda: load_config(p, search=False))),
    "profile": Kind("agent.yaml", _profile),
    "smoke suite": Kind("suite.yaml", lambda p: said(lambda: load_suite(p))),
    "output schema": Kind("schema.json", _schema, lambda v: f'{{"description": {v}}}'),
    "smoke schema": Kind(
        "case.schema.json",
        lambda p: said(lambda: _schema_failures(p.name, {}, p.parent)),
        lambda v: f'{{"description": {v}}}',
    ),
    "token file": Kind("token", lambda p: said(lambda: read_token(p))),
    "patch": Kind("winner.diff", lambda p: said(lambda: read_patch(p))),
    "file a case checks": Kind(
        "answer.txt", lambda p: said(lambda: _file_failures(p.name, "x", p.parent))
    ),
    "pip report": Kind(
        "install-report.json", lambda p: said(lambda: _lock_lines(p)), lambda v: f'{{"x": {v}}}'
    ),
    "install stamp": Kind(
        agent_executable.STAMP, _stamp, lambda v: f'{{"x": {v}}}', names_it=False
    ),
    "registry file": Kind(
        "registry.json",
        lambda p: said(lambda: registry_sources._read(p)),
        lambda v: f'{{"version": "1.0.0", "agents": [], "x": {v}}}',
    ),
    "parse cache entry": Kind("entry.json", _cache, lambda v: f'{{"x": {v}}}', names_it=False),
}


def fifo(path: Path) -> str:
    os.mkfifo(path)
    return "not a regular file: it is a FIFO (named pipe)"


def device(target: str) -> Callable[[Path], str]:
    def make(path: Path) -> str:
        path.symlink_to(target)
        return "not a regular file: it is a character device"

    return make


def gigabytes(path: Path) -> str:
    with path.open("wb") as file:
        file.truncate(8 << 30)
    return f"{8 << 30} bytes: "


NOT_READ: dict[str, Callable[[Path], str]] = {
    "fifo": fifo,
    "/dev/zero": device("/dev/zero"),
    "/dev/urandom": device("/dev/urandom"),
    "8 GiB": gigabytes,
}


@pytest.mark.parametrize("member", NOT_READ)
@pytest.mark.parametrize("kind", KINDS)
def test_an_input_that_is_no_file_or_too_big_is_refused_unread(
    tmp_path: Path, kind: str, member: str
) -> None:
    path = tmp_path / KINDS[kind].file
    reason = NOT_READ[member](path)
    text = KINDS[kind].read(path)
    if KINDS[kind].names_it:
        assert path.name in text and reason in text, text
    else:
        assert text == "None", text  # the bridge's own record, unusable: as if absent


JSON_KINDS = [name for name, kind in KINDS.items() if kind.json_text is not None]


@pytest.mark.parametrize("opener", ["[", '{"a":'])
@pytest.mark.parametrize("kind", JSON_KINDS)
def test_json_nested_past_the_bound_is_refused_in_words(
    tmp_path: Path, kind: str, opener: str
) -> None:
    closer = "]" if opener == "[" else "}"
    value = opener * DEEP + "0" + closer * DEEP
    json_text = KINDS[kind].json_text
    assert json_text is not None
    path = tmp_path / KINDS[kind].file
    path.write_text(json_text(value), encoding="utf-8")
    text = KINDS[kind].read(path)
    if KINDS[kind].skips_lines:
        assert text == "[]", text
    elif KINDS[kind].names_it:
        assert path.name in text and "nested deeper than" in text, text
    else:
        assert text == "None", text


@pytest.mark.parametrize("kind", JSON_KINDS)
def test_line_separators_inside_a_json_string_are_read(tmp_path: Path, kind: str) -> None:
    json_text = KINDS[kind].json_text
    assert json_text is not None
    path = tmp_path / KINDS[kind].file
    path.write_text(json_text(json.dumps(SEPARATOR, ensure_ascii=False)), encoding="utf-8")
    text = KINDS[kind].read(path)
    assert "not valid JSON" not in text and "nested" not in text, text
    assert "Unterminated" not in text and str(path) not in text, text


YAML_KINDS = ["config", "profile", "smoke suite"]


@pytest.mark.parametrize("kind", YAML_KINDS)
def test_yaml_nested_past_the_bound_is_refused_in_words(tmp_path: Path, kind: str) -> None:
    path = tmp_path / KINDS[kind].file
    path.write_text("x: " + "[" * DEEP + "]" * DEEP + "\n")
    text = KINDS[kind].read(path)
    assert "nested" in text, text


def test_every_kind_is_read_by_the_one_reader(tmp_path: Path) -> None:
    """The table covers what the reader is asked for: each kind's own name for itself
    (``what``) is seen by :func:`input_files.open_regular` when its kind is read."""
    seen: list[str] = []
    real = input_files.open_regular

    def spy(path: Path | str, what: str, limit: int) -> int:
        seen.append(what)
        return real(path, what, limit)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(input_files, "open_regular", spy)
        for name, kind in KINDS.items():
            path = tmp_path / name.replace(" ", "-") / kind.file
            path.parent.mkdir()
            path.write_text("{}\n")
            seen.clear()
            kind.read(path)
            assert seen, f"{name}: not read by the bounded reader"
