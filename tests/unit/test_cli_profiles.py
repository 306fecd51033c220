"""The CLI skeleton: profiles list/show/validate/schema, --version, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from acp_bridge._version import __version__
from acp_bridge.cli import main

BROKEN = Path(__file__).parent.parent / "fixtures" / "broken"


pytestmark = pytest.mark.usefixtures("isolated_config")  # no user or local config leaks in


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"acp-bridge {__version__}"


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["profiles", "frobnicate"])
    assert exc.value.code == 2


def test_profiles_list_shows_builtins_with_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert "codex" in rows
    assert all(r["description"] for r in rows.values())


def test_profiles_show_says_where_values_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "acp-bridge.yaml").write_text(
        "acp:\n  agents:\n    - name: codex\n      timeouts: {run: 99}\n"
        "      env: {OPENAI_API_KEY: sk-secret, MODE: fast}\n"
    )
    assert main(["profiles", "show", "codex"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("timeouts.run"))
    assert "99" in line and "config acp-bridge.yaml:4:23" in line
    assert "sk-secret" not in out and "<redacted, 9 chars>" in out
    assert '"fast"' in out
    assert "built-in" in next(x for x in out.splitlines() if x.startswith("command"))
    assert "default" in next(x for x in out.splitlines() if x.startswith("terminal.timeout"))


def test_show_unknown_profile_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles", "show", "nope"]) == 2
    assert "error: no agent profile named 'nope'" in capsys.readouterr().err


def test_validate_broken_fixtures_exits_2_with_one_line_each(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["profiles", "validate", str(BROKEN)]) == 2
    lines = capsys.readouterr().out.splitlines()
    files = sorted(BROKEN.glob("*.yaml"))
    assert len(lines) == len(files) >= 15
    for line, path in zip(sorted(lines), files, strict=True):
        assert line.startswith(f"{path}:"), line


def test_validate_good_file_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("name: good\ncommand: agent\n")
    assert main(["profiles", "validate", "-v", str(good)]) == 0
    assert "good.yaml: ok" in capsys.readouterr().out


def test_validate_active_config_reports_broken_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "acp-bridge.yaml").write_text("acp:\n  agents:\n    - name: x\n")
    assert main(["profiles", "validate"]) == 2
    assert "acp-bridge.yaml:3:7: acp.agents[0].command: is required" in capsys.readouterr().out


def test_broken_config_file_exits_2_for_any_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "acp-bridge.yaml").write_text("subtasks: {max_depth: many}\n")
    assert main(["profiles", "list"]) == 2
    err = capsys.readouterr().err
    assert (
        'error: acp-bridge.yaml:1:23: subtasks.max_depth: must be a whole number, got "many"'
    ) in err


def test_schema_is_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles", "schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "acp-bridge configuration"


def test_python_dash_m_and_console_script_agree(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "acp_bridge", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == f"acp-bridge {__version__}"


def test_public_api_names_all_resolve() -> None:
    import acp_bridge

    assert set(acp_bridge._EXPORTS) | {"__version__"} == set(acp_bridge.__all__)
    assert acp_bridge.__all__ == sorted(acp_bridge.__all__)
    for name in acp_bridge._EXPORTS:
        value = getattr(acp_bridge, name)
        # Each name is the object its private module defines (never a module), so it is
        # the same object there and here.
        assert not isinstance(value, types.ModuleType), name
        assert getattr(sys.modules[acp_bridge._EXPORTS[name]], name) is value
