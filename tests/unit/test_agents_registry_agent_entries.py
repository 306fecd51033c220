"""The ACP registry's file read: its shipped snapshot parses, a bad entry is named, and an
entry becomes a pinned package for this platform (or a refusal that says why)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from acp_bridge._agents.registry.agent_entries import derive, parse_registry, this_platform
from acp_bridge._agents.registry.sources import SNAPSHOT, SNAPSHOT_DATE
from acp_bridge.errors import ConfigError


def agent(distribution: dict[str, Any], **fields: Any) -> dict[str, Any]:
    base = {"id": "x", "name": "X", "version": "1.2.3", "description": "an agent"}
    return {**base, **fields, "distribution": distribution}


def registry(*agents: dict[str, Any]) -> dict[str, Any]:
    return {"version": "1.0.0", "agents": list(agents), "extensions": []}


def test_the_shipped_snapshot_parses_and_is_dated() -> None:
    parsed = parse_registry(json.loads(SNAPSHOT.read_text()), str(SNAPSHOT))
    assert len(parsed.agents) >= 10 and parsed.get("gemini") is not None
    assert SNAPSHOT_DATE.count("-") == 2 and SNAPSHOT_DATE[:2] == "20"


def test_a_bad_entry_is_named_by_index_and_id_with_every_problem() -> None:
    bad = agent({"binary": {this_platform(): {"archive": "ftp://x"}}}, id="broken")
    with pytest.raises(ConfigError) as caught:
        parse_registry(registry(agent({"npx": {"package": "a"}}), bad), "reg.json")
    message = str(caught.value)
    assert message.startswith("reg.json: agents[1] ('broken'): ")
    assert f"distribution.binary.{this_platform()}.archive" in message
    assert f"distribution.binary.{this_platform()}.cmd: Field required" in message
    with pytest.raises(ConfigError, match="not an ACP registry"):
        parse_registry([], "reg.json")
    with pytest.raises(ConfigError, match="agent ids listed twice: x"):
        parse_registry(
            registry(agent({"npx": {"package": "a"}}), agent({"npx": {"package": "b"}})), "r"
        )


def test_unknown_keys_are_ignored_the_registry_may_grow() -> None:
    parsed = parse_registry(registry(agent({"npx": {"package": "a"}}, icon="i.svg", new=1)), "r")
    assert parsed.agents[0].id == "x"


@pytest.mark.parametrize(
    ("kind", "package", "name", "version"),
    [
        ("npx", "@scope/pkg@2.0.1", "@scope/pkg", "2.0.1"),
        ("npx", "pkg@2.0.1", "pkg", "2.0.1"),
        ("npx", "@scope/pkg", "@scope/pkg", "1.2.3"),  # none given: the entry's version
        ("uvx", "pkg==0.4.0", "pkg", "0.4.0"),
        ("uvx", "pkg@0.4.0", "pkg", "0.4.0"),
        ("uvx", "pkg", "pkg", "1.2.3"),
    ],
)
def test_a_package_entry_is_pinned(kind: str, package: str, name: str, version: str) -> None:
    entry = parse_registry(registry(agent({kind: {"package": package, "args": ["--acp"]}})), "r")
    derived = derive(entry.agents[0])
    assert (derived.spec.name, derived.spec.version, derived.args) == (name, version, ["--acp"])
    assert derived.command == (None if kind == "npx" else name)


def test_a_package_entry_with_a_range_is_refused() -> None:
    entry = parse_registry(registry(agent({"npx": {"package": "pkg@^1.0"}})), "r").agents[0]
    with pytest.raises(ConfigError, match=r"registry agent .x.: its package version: .*exact"):
        derive(entry)


def test_a_binary_entry_for_this_platform_or_a_refusal_naming_what_it_has() -> None:
    target = {"archive": "https://e.org/a.tar.gz", "cmd": "./bin/agent", "env": {"K": "v"}}
    here = parse_registry(registry(agent({"binary": {this_platform(): target}})), "r").agents[0]
    derived = derive(here)
    assert derived.spec.manager == "binary" and derived.spec.cmd == "./bin/agent"
    assert derived.command == "agent" and derived.env == {"K": "v"}
    other = "windows-aarch64" if this_platform() != "windows-aarch64" else "linux-x86_64"
    away = parse_registry(registry(agent({"binary": {other: target}})), "r").agents[0]
    with pytest.raises(ConfigError, match=f"no archive for this platform .*one for {other}"):
        derive(away)


def test_a_path_out_of_the_archive_is_refused() -> None:
    target = {"archive": "https://e.org/a.zip", "cmd": "../../bin/sh"}
    entry = parse_registry(registry(agent({"binary": {this_platform(): target}})), "r").agents[0]
    with pytest.raises(ConfigError, match=r"cmd: .*inside the archive"):
        derive(entry)


def test_packages_come_before_archives() -> None:
    target = {"archive": "https://e.org/a.zip", "cmd": "./a"}
    both = agent({"binary": {this_platform(): target}, "npx": {"package": "a@1.0.0"}})
    assert derive(parse_registry(registry(both), "r").agents[0]).kind == "npx"
