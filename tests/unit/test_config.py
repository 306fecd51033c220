"""Config files and profiles: search order, layering, provenance, ${VAR}, precise errors."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import jsonschema
import pytest

from acp_bridge.config import (
    BUILTIN_PROFILES_DIR,
    config_json_schema,
    expand_vars,
    find_config_file,
    load_config,
    profile_json_schema,
    validate_files,
)
from acp_bridge.errors import ConfigError, ProfileError, UnknownProfileError

BROKEN = Path(__file__).parent.parent / "fixtures" / "broken"
EXPECT = re.compile(r"^# expect: (?P<line>\d+):(?P<col>\d+) (?P<message>.+)$")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- the broken fixtures: one precise error each ----------------------------------------

BROKEN_FILES = sorted(BROKEN.glob("*.yaml"))


def test_there_are_at_least_fifteen_broken_fixtures() -> None:
    assert len(BROKEN_FILES) >= 15


@pytest.mark.parametrize("path", BROKEN_FILES, ids=lambda p: p.stem)
def test_broken_fixture_gives_one_precise_error(path: Path) -> None:
    expect = EXPECT.match(path.read_text().splitlines()[0])
    assert expect, f"{path.name} needs a '# expect: LINE:COL MESSAGE' first line"
    problems = validate_files([path], environ={})[path]
    assert len(problems) == 1, [str(p) for p in problems]
    problem = problems[0]
    assert problem.location is not None
    assert problem.location.path == path
    assert (problem.location.line, problem.location.column) == (
        int(expect["line"]),
        int(expect["col"]),
    ), str(problem)
    assert expect["message"] in str(problem).split(f":{expect['col']}: ", 1)[1]


# --- ${VAR} expansion --------------------------------------------------------------------


def test_expand_vars_forms() -> None:
    env = {"HOME": "/home/u", "EMPTY": ""}
    assert expand_vars("${HOME}/x", env) == ("/home/u/x", ["HOME"])
    assert expand_vars("${MISSING:-fallback}", env) == ("fallback", ["MISSING"])
    assert expand_vars("${EMPTY:-d}", env) == ("", ["EMPTY"])
    assert expand_vars("cost $$5 and $HOME", env) == ("cost $5 and $HOME", [])
    for bad in ("${}", "${1X}", "${A B}", "${OPEN"):
        with pytest.raises(ValueError):
            expand_vars(bad, env)
    with pytest.raises(ValueError, match="MISSING is not set"):
        expand_vars("${MISSING}", env)


def test_unset_variable_breaks_only_the_profile_that_uses_it(tmp_path: Path) -> None:
    config = write(
        tmp_path / "acp-bridge.yaml",
        """
acp:
  agents:
    - name: needs-key
      command: agent
      env: {API_KEY: "${NOT_SET_ANYWHERE}"}
    - name: fine
      command: agent
""",
    )
    loaded = load_config(config, environ={})
    assert loaded.profiles.get("fine").profile.command == "agent"
    with pytest.raises(ProfileError, match=r"acp-bridge.yaml:6:22: acp.agents\[0\].env.API_KEY"):
        loaded.profiles.get("needs-key")
    expanded = load_config(config, environ={"NOT_SET_ANYWHERE": "k"})
    assert expanded.profiles.get("needs-key").profile.env == {"API_KEY": "k"}


def test_the_secrets_of_a_profile_are_its_values_under_secret_names(tmp_path: Path) -> None:
    """A value is a secret under a secret-looking name, or made from a variable with one (and
    that variable's value is too, inside a longer value); a path made from ``${LAB}`` is
    not: the errors that name it must show it."""
    config = write(
        tmp_path / "acp-bridge.yaml",
        """
acp:
  agents:
    - name: x
      command: agent
      env: {OPENAI_API_KEY: k-123456, CODEX_HOME: "${LAB}/codex", URL: "${PLAIN}",
            CONFIG: '{"key": "${MY_TOKEN}"}'}
      mcp_servers:
        - {name: docs, type: http, url: "http://h/mcp",
           headers: {Authorization: "Bearer ${MY_TOKEN}", X-Trace: "${PLAIN}"}}
""",
    )
    environ = {"LAB": str(tmp_path), "MY_TOKEN": "tok-123456", "PLAIN": "plain-value"}
    profile = load_config(config, environ=environ).profiles.get("x").profile
    assert sorted(profile.secret_values()) == sorted(
        ["k-123456", '{"key": "tok-123456"}', "Bearer tok-123456", "tok-123456"]
    )


# --- search order --------------------------------------------------------------------------


def test_config_search_order(tmp_path: Path) -> None:
    home = tmp_path / "home"
    user = write(home / ".config" / "acp-bridge" / "config.yaml", "{}\n")
    work = tmp_path / "work"
    work.mkdir()
    env = {"HOME": str(home)}
    assert find_config_file(None, env, work) == user
    local = write(work / "acp-bridge.yaml", "{}\n")
    assert find_config_file(None, env, work) == local
    env_file = write(tmp_path / "env.yaml", "{}\n")
    assert find_config_file(None, {**env, "ACP_BRIDGE_CONFIG": str(env_file)}, work) == env_file
    explicit = tmp_path / "explicit.yaml"
    assert find_config_file(explicit, {**env, "ACP_BRIDGE_CONFIG": str(env_file)}, work) == explicit
    xdg = write(tmp_path / "xdg" / "acp-bridge" / "config.yaml", "{}\n")
    assert find_config_file(None, {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}, tmp_path) == xdg


def test_no_config_file_means_builtin_profiles_and_defaults(tmp_path: Path) -> None:
    loaded = load_config(None, environ={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert loaded.path is None
    assert loaded.config.subtasks.max_depth == 1
    assert loaded.config.tools.acp_spawn.enabled is False
    builtin = {p.stem for p in BUILTIN_PROFILES_DIR.glob("*.yaml")}
    assert builtin <= set(loaded.profiles.names())


def test_a_config_path_and_cwd_may_be_strings(tmp_path: Path) -> None:
    config = write(tmp_path / "given.yaml", "subtasks: {max_depth: 3}\n")
    loaded = load_config(str(config), environ={"HOME": str(tmp_path)}, cwd=str(tmp_path))
    assert loaded.path == config
    assert loaded.config.subtasks.max_depth == 3
    with pytest.raises(ConfigError, match="cannot read file: No such file"):
        load_config(str(tmp_path / "nope.yaml"), environ={})


def test_explicit_missing_config_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read file: No such file"):
        load_config(tmp_path / "nope.yaml", environ={})


# --- renamed keys ------------------------------------------------------------------------------


def test_a_renamed_key_still_works_under_its_old_name_with_a_warning_at_its_line(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "old.yaml", "runs:\n  max_events: 100\n  runner_idle: 5\n")
    with pytest.warns(FutureWarning) as caught:
        loaded = load_config(path, environ={})
    assert loaded.config.runs.supervisor_idle == 5
    [warning] = caught
    assert (warning.filename, warning.lineno) == (str(path), 3)
    assert str(warning.message) == (
        "runs.runner_idle is deprecated: it was renamed runs.supervisor_idle (the same setting)"
    )


def test_a_renamed_keys_bad_value_is_reported_where_the_file_has_it(tmp_path: Path) -> None:
    path = write(tmp_path / "old.yaml", "runs:\n  runner_idle: -1\n")
    with pytest.warns(FutureWarning), pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    [problem] = caught.value.problems
    assert problem.location is not None and problem.location.line == 2
    assert problem.field == "runs.runner_idle" and "at least 0" in problem.message


def test_a_renamed_key_set_under_both_names_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "both.yaml", "runs:\n  supervisor_idle: 1\n  runner_idle: 2\n")
    with pytest.raises(ConfigError, match="keep only supervisor_idle") as caught:
        load_config(path, environ={})
    [problem] = caught.value.problems
    assert problem.location is not None and problem.location.line == 3


def test_the_new_name_loads_without_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path / "new.yaml", "runs:\n  supervisor_idle: 0.5\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_config(path, environ={}).config.runs.supervisor_idle == 0.5


# --- state paths follow the agent's environment -------------------------------------------


def state_of(tmp_path: Path, environ: dict[str, str], **profile: object) -> list[str]:
    """The resolved ``sandbox.state`` of a profile ``codex`` laid over ``profiles/codex.yaml``
    (which passes CODEX_HOME through and lists ``${CODEX_HOME:-~/.codex}``, as a built-in
    profile does), given the config entry's ``profile`` keys."""
    write(
        tmp_path / "profiles" / "codex.yaml",
        "name: codex\ncommand: codex-acp\nenv_passthrough: [CODEX_HOME]\n"
        'sandbox: {state: ["${CODEX_HOME:-~/.codex}", "${LAB:-/nolab}/x", ~/.npm]}\n',
    )
    entry = json.dumps({"name": "codex", **profile})
    config = write(
        tmp_path / "acp-bridge.yaml", f"profiles_dirs: [profiles]\nacp:\n  agents: [{entry}]\n"
    )
    loaded = load_config(config, environ=environ)
    return [str(p) for p in loaded.profiles.get("codex").profile.sandbox.state]


def test_state_paths_expand_from_the_environment_the_agent_gets(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    relocated, lab = tmp_path / "relocated", tmp_path / "lab"
    base = {"HOME": str(home)}
    # Nothing set: the agent's defaults.
    assert state_of(tmp_path, base) == [f"{home}/.codex", "/nolab/x", f"{home}/.npm"]
    # Passed through from the host: the host's value, which the agent gets.
    with_host = {**base, "CODEX_HOME": str(relocated)}
    assert state_of(tmp_path, with_host)[0] == str(relocated)
    # Set on the host but not given to the agent: the agent uses its default, so does this.
    assert state_of(tmp_path, with_host, env_passthrough=[])[0] == f"{home}/.codex"
    # Set by the profile (from a host variable): what the agent gets. ${LAB:-/nolab} has a
    # default and the agent is not given LAB: the default, as for CODEX_HOME above.
    assert state_of(tmp_path, {**base, "LAB": str(lab)}, env={"CODEX_HOME": "${LAB}/c"}) == [
        f"{lab}/c", "/nolab/x", f"{home}/.npm",
    ]  # fmt: skip
    # The agent's HOME is its own: `~` follows a profile that sets it.
    agent_home = tmp_path / "agent-home"
    assert state_of(tmp_path, base, env={"HOME": str(agent_home)}) == [
        f"{agent_home}/.codex", "/nolab/x", f"{agent_home}/.npm",
    ]  # fmt: skip


def test_auth_files_expand_from_the_environment_the_agent_gets(tmp_path: Path) -> None:
    """Where the agent keeps its login follows its own relocation, as its state does
    (opencode's ``${XDG_DATA_HOME:-~/.local/share}/opencode/auth.json``); a relative path
    is the profile file's folder's."""
    home, data = tmp_path / "home", tmp_path / "data"
    config = write(
        tmp_path / "acp-bridge.yaml",
        "acp:\n  agents:\n    - {name: x, command: a, env_passthrough: [XDG_DATA_HOME],\n"
        '       auth: {files: ["${XDG_DATA_HOME:-~/.local/share}/x/auth.json", key.txt],\n'
        "              checked_by_session: false}}\n",
    )
    auth = load_config(config, environ={"HOME": str(home)}).profiles.get("x").profile.auth
    assert auth.files == [home / ".local/share/x/auth.json", tmp_path / "key.txt"]
    assert not auth.checked_by_session
    environ = {"HOME": str(home), "XDG_DATA_HOME": str(data)}
    auth = load_config(config, environ=environ).profiles.get("x").profile.auth
    assert auth.files[0] == data / "x/auth.json"


def test_a_state_variable_without_a_default_may_be_the_operators(tmp_path: Path) -> None:
    """``${LAB}/state``: not given to the agent, required, so read from the host (the
    operator names a folder of theirs); unset anywhere, the profile is broken, at its line."""
    config = write(
        tmp_path / "acp-bridge.yaml",
        'acp:\n  agents:\n    - {name: x, command: a, sandbox: {state: ["${LAB}/state"]}}\n',
    )
    loaded = load_config(config, environ={"LAB": str(tmp_path)})
    assert loaded.profiles.get("x").profile.sandbox.state == [tmp_path / "state"]
    assert loaded.profiles.get("x").source_of(("sandbox", "state", 0)).env_vars == ("LAB",)
    with pytest.raises(ProfileError, match=r"acp.agents\[0\].sandbox.state\[0\]: .*LAB is not set"):
        load_config(config, environ={}).profiles.get("x")


# --- layering and provenance ------------------------------------------------------------------


def test_config_entry_deep_merges_over_a_profile_dir_and_builtin(tmp_path: Path) -> None:
    write(
        tmp_path / "profiles" / "mine.yaml",
        """
name: mine
description: from the folder
command: mine-agent
args: [--acp]
timeouts: {startup: 5, run: 100}
env: {A: "1"}
""",
    )
    config = write(
        tmp_path / "acp-bridge.yaml",
        """
profiles_dirs: [profiles]
acp:
  agents:
    - name: mine
      timeouts: {run: 42}
      env: {B: "${HOME}"}
""",
    )
    loaded = load_config(config, environ={"HOME": "/h"})
    resolved = loaded.profiles.get("mine")
    profile = resolved.profile
    assert profile.timeouts.startup == 5  # kept from the folder
    assert profile.timeouts.run == 42  # overridden by the config
    assert profile.env == {"A": "1", "B": "/h"}  # mappings merge
    assert profile.args == ["--acp"]
    assert str(resolved.source_of(("timeouts", "run"))).startswith("config ")
    assert "acp-bridge.yaml:6:23" in str(resolved.source_of(("timeouts", "run")))
    assert str(resolved.source_of(("timeouts", "startup"))).startswith("profiles dir ")
    assert str(resolved.source_of(("env", "B"))).endswith("via env $HOME")
    assert str(resolved.source_of(("terminal", "timeout"))) == "default"


def test_lists_replace_rather_than_append(tmp_path: Path) -> None:
    write(tmp_path / "p" / "x.yaml", "command: x\nargs: [a, b]\n")
    config = write(
        tmp_path / "c.yaml", "profiles_dirs: [p]\nacp: {agents: [{name: x, args: [c]}]}\n"
    )
    assert load_config(config, environ={}).profiles.get("x").profile.args == ["c"]


def test_profile_file_name_defaults_to_its_stem(tmp_path: Path) -> None:
    write(tmp_path / "p" / "stemmy.yaml", "command: s\n")
    config = write(tmp_path / "c.yaml", "profiles_dirs: [p]\n")
    assert load_config(config, environ={}).profiles.get("stemmy").profile.name == "stemmy"


def test_paths_are_relative_to_the_file_that_names_them(tmp_path: Path) -> None:
    (tmp_path / "conf" / "work").mkdir(parents=True)
    (tmp_path / "conf" / "p" / "data").mkdir(parents=True)
    write(tmp_path / "conf" / "p" / "x.yaml", "command: x\nread_roots: [data]\n")
    config = write(
        tmp_path / "conf" / "c.yaml",
        """
profiles_dirs: [p]
acp: {agents: [{name: x, cwd: work}]}
""",
    )
    profile = load_config(config, environ={}, cwd=Path("/")).profiles.get("x").profile
    assert profile.cwd == (tmp_path / "conf" / "work").resolve()
    assert profile.read_roots == [(tmp_path / "conf" / "p" / "data").resolve()]


def test_unknown_profile_lists_the_known_ones(tmp_path: Path) -> None:
    loaded = load_config(None, environ={}, search=False)
    with pytest.raises(UnknownProfileError, match="no agent profile named 'nope'; known"):
        loaded.profiles.get("nope")


def test_all_problems_of_one_profile_are_reported(tmp_path: Path) -> None:
    path = write(
        tmp_path / "many.yaml",
        """
name: many
command: x
timeouts: {run: ten, startup: 0}
permissions: {mode: nope}
""",
    )
    problems = validate_files([path], environ={})[path]
    assert [str(p).split(": ", 1)[1].split(":")[0] for p in problems] == [
        "timeouts.run",
        "timeouts.startup",
        "permissions.mode",
    ]


def test_builtin_profiles_all_validate() -> None:
    results = validate_files([BUILTIN_PROFILES_DIR], environ={})
    assert results, "no built-in profiles found"
    assert {p.name: [str(x) for x in v] for p, v in results.items() if v} == {}


# --- JSON Schema export ------------------------------------------------------------------------


def test_config_schema_accepts_a_full_config_and_rejects_unknown_keys() -> None:
    schema = config_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    good = {
        "tools": {"spawn": {"enabled": True}, "acp_spawn": {"enabled": True}},
        "subtasks": {"max_depth": 1},
        "acp": {
            "agents": [
                {
                    "name": "codex",
                    "command": "codex-acp",
                    "args": [],
                    "env": {"K": "${K}"},
                    "env_passthrough": ["HTTPS_PROXY"],
                    "cwd": ".",
                    "read_roots": ["."],
                    "permissions": {
                        "mode": "workspace-write",
                        "rules": [{"kind": "execute", "title": "git *", "decision": "allow"}],
                    },
                    "timeouts": {"startup": 30, "session": 60, "run": 600},
                    "terminal": {"output_byte_limit": 1048576, "timeout": 600},
                    "auth": {"method": "openai-api-key"},
                    "mcp_servers": [],
                    "session": {
                        "mode": "auto",
                        "model": "gpt-5",
                        "config_options": {"reasoning_effort": "low"},
                    },
                },
                {"name": "override-only", "timeouts": {"run": 10}},
            ]
        },
    }
    jsonschema.validate(good, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"acp": {"agents": [{"name": "x", "comand": "y"}]}}, schema)


def test_profile_schema_is_valid_json_schema() -> None:
    schema = profile_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "command" in schema["properties"]
    json.dumps(schema)


# --- protocol: as the docs write it -----------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "read"), [("1", "1"), ("2", "2"), ('"2"', "2"), ("auto", "auto")]
)
def test_protocol_is_v1_by_default_and_may_be_a_yaml_number(
    tmp_path: Path, written: str, read: str
) -> None:
    path = write(
        tmp_path / "c.yaml",
        "acp:\n  agents:\n"
        f"    - {{name: a, command: x, protocol: {written}}}\n"
        "    - {name: b, command: x}\n",
    )
    profiles = load_config(path, environ={}, search=False).profiles
    assert profiles.get("a").runnable().protocol == read
    assert profiles.get("b").runnable().protocol == "1"  # the v2 Preview only when asked
