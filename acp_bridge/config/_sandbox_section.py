"""The ``sandbox:`` section: how a run's agent process is confined by the OS
(docs/explanation/security.md, the OS sandbox).

A profile's section is laid over the config file's (``sandbox:`` at the top level, the
default for every profile and for the ``bash`` entry): ``mode`` and ``network`` are taken
from the first that sets them (else ``auto`` and on); ``state``, ``readable`` and ``hidden``
are the union of both. Paths are resolved at load (``~`` is the user's home; relative paths
are relative to the file that wrote them). A profile's ``state`` and ``readable`` expand
``${VAR}`` from the environment its agent gets (``config/_expand.py``, ``expand_for_agent``),
the config file's section from the host's.
"""

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from acp_bridge._records.field_defaults import empty_list
from acp_bridge.config._fields import StrictModel

SandboxMode = Literal["auto", "bwrap", "landlock", "off"]
IsolationMode = Literal["none", "worktree"]
KeepWorktree = Literal["changed", "always", "never"]


class SandboxSettings(StrictModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: SandboxMode | None = Field(
        None,
        description="auto (bubblewrap when it works here, else Landlock, else an error that "
        "says how to fix it) | bwrap | landlock | off; default: the config file's, else auto. "
        "off is never chosen for you",
    )
    network: bool | None = Field(
        None, description="on (the default: agents need their model API) | off"
    )
    state: list[Path] = Field(
        default_factory=empty_list,
        description="paths the agent may write besides its write roots: its own state "
        "(~/.claude, ~/.codex, npm caches); missing directories are created. In a profile, "
        "${VAR} reads the environment the agent gets, so a path follows the agent's own "
        "relocation: ${CODEX_HOME:-~/.codex}",
    )
    readable: list[Path] = Field(
        default_factory=empty_list,
        description="paths kept visible (read-only) even under /tmp or a hidden directory; "
        "in a profile, ${VAR} reads the agent's environment, as for state",
    )
    hidden: list[Path] = Field(
        default_factory=empty_list,
        description="paths made invisible, on top of the user's secrets (~/.ssh, ~/.aws, "
        "~/.gnupg, ~/.config/gh, ~/.netrc, ~/.docker, …)",
    )

    @field_validator("network", mode="before")
    @classmethod
    def _on_off(cls, value: Any) -> Any:
        # YAML 1.2 reads `on` / `off` as strings; the documented spelling is on | off.
        if isinstance(value, str) and value.lower() in ("on", "off"):
            return value.lower() == "on"
        return value

    def over(self, default: "SandboxSettings") -> "ResolvedSandbox":
        """This section laid over ``default`` (the config file's section)."""
        return ResolvedSandbox(
            mode=self.mode or default.mode or "auto",
            network=self.network if self.network is not None else default.network is not False,
            state=tuple(dict.fromkeys([*default.state, *self.state])),
            readable=tuple(dict.fromkeys([*default.readable, *self.readable])),
            hidden=tuple(dict.fromkeys([*default.hidden, *self.hidden])),
        )


class ResolvedSandbox(BaseModel):
    """The sandbox settings a run uses, every default applied."""

    model_config = ConfigDict(frozen=True)

    mode: SandboxMode
    network: bool
    state: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
