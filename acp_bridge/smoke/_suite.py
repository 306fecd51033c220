"""Smoke suite files: cases, their entry path, and what their envelope must show.

A suite is YAML::

    name: demo agent                   # default: the file's stem
    defaults: {entry: acp_spawn, agents: [demo], timeout: 60}   # filled into every case
    cases:
      - name: replies exactly
        task: Reply with exactly OK
        expect: {status: done, output: OK}

A case with several ``agents`` runs once per agent, like a matrix. Errors point at the file,
line and column like config errors do; unknown keys are errors.
"""

import copy
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field, model_validator

from acp_bridge.config import MAX_SECONDS, StrictModel
from acp_bridge.config._yaml.located import DataPath, field_name, load_yaml, validate_located
from acp_bridge.errors import ConfigError, SourceLocation

EntryName = Literal["acp_spawn", "spawn", "bash", "ask"]
_NEEDS_TASK = {"acp_spawn", "spawn", "ask"}
_CASE_DEFAULTS = ("entry", "agents", "timeout", "model", "tools", "output_schema", "files")


class FileExpect(StrictModel):
    exists: bool = True
    equals: str | None = None
    contains: str | None = None
    regex: str | None = None


class PermissionExpect(StrictModel):
    kind: str | None = None
    title: str | None = Field(None, description="glob on the tool call title")
    decision: Literal["allowed", "rejected", "cancelled"]


class Expect(StrictModel):
    """What the envelope of a case must show; every field is optional."""

    status: Literal["done", "failed"] | None = None
    error_code: str | None = None
    output: str | None = Field(
        None, description="equals the output (surrounding whitespace ignored)"
    )
    output_contains: list[str] = Field(default_factory=list)
    output_regex: str | None = None
    json_equals: Any = Field(None, alias="json", description="the output, as JSON, equals this")
    json_schema: dict[str, Any] | str | None = Field(
        None, description="a JSON Schema, inline or a file relative to the suite"
    )
    envelope: dict[str, Any] | None = Field(
        None, description="a subset of the envelope: mappings by key, lists item by item"
    )
    files: dict[str, str | FileExpect] = Field(
        default_factory=dict, description="workspace files afterwards: content, or checks"
    )
    permissions: list[PermissionExpect] = Field(default_factory=list)
    max_duration: float | None = Field(None, gt=0, le=MAX_SECONDS, description="seconds")

    @model_validator(mode="before")
    @classmethod
    def _contains_as_list(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("output_contains"), str):
            data = {**data, "output_contains": [data["output_contains"]]}
        return data

    @property
    def has_json(self) -> bool:
        return "json_equals" in self.model_fields_set


class Case(StrictModel):
    name: str = Field(min_length=1)
    entry: EntryName = "acp_spawn"
    agents: list[str] = Field(default_factory=list, description="acp_spawn: profiles to run")
    task: str | None = Field(None, description="the prompt (acp_spawn, spawn, ask)")
    command: str | None = Field(None, description="the shell line (bash)")
    tools: list[str] | None = Field(None, description="spawn/ask: tools offered")
    model: str | None = None
    output_schema: str | None = None
    timeout: float | None = Field(None, gt=0, le=MAX_SECONDS, description="seconds for the run")
    files: dict[str, str] = Field(
        default_factory=dict, description="files written into the fresh workspace first"
    )
    expect: Expect = Field(default_factory=Expect)

    @model_validator(mode="after")
    def _fits_its_entry(self) -> Self:
        if self.entry in _NEEDS_TASK and not self.task:
            raise ValueError(f"an {self.entry} case needs a task")
        if self.entry == "bash" and not self.command:
            raise ValueError("a bash case needs a command")
        if self.entry == "acp_spawn" and not self.agents:
            raise ValueError("an acp_spawn case needs agents (here or in defaults)")
        if self.entry == "spawn" and not self.tools:
            raise ValueError("a spawn case needs tools")
        if self.entry != "acp_spawn" and self.agents:
            raise ValueError(f"agents only apply to acp_spawn cases, not {self.entry}")
        return self


class Defaults(StrictModel):
    entry: EntryName | None = None
    agents: list[str] | None = None
    timeout: float | None = Field(None, gt=0, le=MAX_SECONDS)
    model: str | None = None
    tools: list[str] | None = None
    output_schema: str | None = None
    files: dict[str, str] | None = None


class SuiteFile(StrictModel):
    name: str | None = None
    description: str = ""
    defaults: Defaults = Field(default_factory=Defaults)
    cases: list[Case] = Field(min_length=1)


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    cases: list[Case]
    locations: dict[str, SourceLocation]
    """Where each case starts, by name (for reports pointing back at the file)."""


def load_suite(path: Path) -> Suite:
    """Read and check one suite file; ConfigError with file:line:column when it is wrong."""
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise ConfigError([doc.problem((), "a suite must be a mapping with cases")])
    data = copy.deepcopy(doc.data)
    defaults = data.get("defaults") if isinstance(data.get("defaults"), dict) else {}
    for case in data.get("cases") or []:
        if isinstance(case, dict) and isinstance(defaults, dict):
            _fill_defaults(case, defaults)

    def locate(loc: DataPath, at_key: bool) -> tuple[SourceLocation, str]:
        return (doc.locate_key(loc) if at_key else doc.locate(loc)), field_name(loc)

    parsed: SuiteFile = validate_located(SuiteFile, data, locate)
    names = [c.name for c in parsed.cases]
    # Counted once (a count per name was quadratic: minutes for 15 000 cases).
    duplicates = sorted(n for n, times in Counter(names).items() if times > 1)
    if duplicates:
        index = names.index(duplicates[0], names.index(duplicates[0]) + 1)
        raise ConfigError(
            [doc.problem(("cases", index, "name"), f"duplicate case name {duplicates[0]!r}")]
        )
    return Suite(
        name=parsed.name or path.stem,
        path=path,
        cases=parsed.cases,
        locations={c.name: doc.locate(("cases", i)) for i, c in enumerate(parsed.cases)},
    )


def _fill_defaults(case: dict[str, Any], defaults: dict[str, Any]) -> None:
    """Default values for the keys a case does not set (agents only for acp_spawn cases)."""
    entry = case.get("entry", defaults.get("entry", "acp_spawn"))
    for key in _CASE_DEFAULTS:
        if key not in defaults or key in case:
            continue
        if key == "agents" and entry != "acp_spawn":
            continue
        case[key] = copy.deepcopy(defaults[key])


@dataclass(frozen=True)
class CaseRun:
    """One run of one case: the case, for one agent when it is a matrix."""

    suite: Suite
    case: Case
    agent: str | None = None

    @property
    def name(self) -> str:
        return f"{self.case.name} [{self.agent}]" if self.agent else self.case.name

    @property
    def id(self) -> str:
        return f"{self.suite.name}::{self.name}"


def expand(suites: list[Suite], agents: list[str] | None = None) -> tuple[list[CaseRun], int]:
    """Every run of every case; ``agents`` keeps only those agents (a filter). Returns the
    runs and how many matrix entries the filter left out."""
    runs: list[CaseRun] = []
    filtered = 0
    for suite in suites:
        for case in suite.cases:
            if case.entry != "acp_spawn":
                runs.append(CaseRun(suite, case))
                continue
            for agent in case.agents:
                if agents is None or agent in agents:
                    runs.append(CaseRun(suite, case, agent))
                else:
                    filtered += 1
    return runs, filtered
