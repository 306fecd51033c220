"""What the agent has told us about the session, kept current: its modes, models, config
options, title and commands.

Two sources feed it: the replies of session setup and ``session/set_config_option`` (which
carry the complete option list), and the ``session/update`` stream (``current_mode_update``,
``config_option_update``, ``session_info_update``, ``available_commands_update``). Whichever
came last wins, as the spec says both carry the complete state. The envelope's ``meta``
reports it at the end of a run.
"""

from __future__ import annotations

from typing import Any

from acp_bridge._acp.wire.schema import (
    ConfigOption,
    SessionModelState,
    SessionModeState,
    SessionSetup,
)
from acp_bridge._acp.wire.versions import read_config_options


class SessionState:
    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = (
        "commands", "config_options", "mode_id", "model_id", "models", "modes", "title",
        "updated_at", "version",
    )  # fmt: skip

    def __init__(
        self,
        modes: SessionModeState | None = None,
        mode_id: str | None = None,
        models: SessionModelState | None = None,
        model_id: str | None = None,
        config_options: list[ConfigOption] | None = None,
        title: str | None = None,
        updated_at: str | None = None,
        commands: list[str] | None = None,
    ) -> None:
        self.modes = modes
        self.mode_id = mode_id
        self.models = models
        self.model_id = model_id
        self.config_options: list[ConfigOption] = [] if config_options is None else config_options
        self.title = title
        self.updated_at = updated_at
        self.commands: list[str] = [] if commands is None else commands
        self.version: int | None = None
        """The wire version spoken (set at initialize): how config options are keyed."""

    def apply_setup(self, setup: SessionSetup) -> None:
        """A session setup reply (new, load, resume, fork): what it says replaces ours."""
        if setup.modes is not None:
            self.modes = setup.modes
            self.mode_id = setup.modes.current_mode_id
        if setup.models is not None:
            self.models = setup.models
            self.model_id = setup.models.current_model_id
        if setup.config_options is not None:
            self.config_options = list(setup.config_options)
        if setup.available_commands is not None:
            self.commands_update({"availableCommands": setup.available_commands})

    def options(self) -> dict[str, ConfigOption]:
        return {option.id: option for option in self.config_options}

    def option_in(self, category: str) -> ConfigOption | None:
        """The first option of ``category`` (the spec: earlier options win ties), else the
        option whose id is the category's name (agents older than categories)."""
        found = next((o for o in self.config_options if o.category == category), None)
        return found or self.options().get(category)

    def config_values(self) -> dict[str, Any]:
        return {o.id: o.current_value for o in self.config_options if o.current_value is not None}

    def current_mode(self) -> str | None:
        option = self.option_in("mode")
        if option is not None and isinstance(option.current_value, str):
            return option.current_value
        return self.mode_id

    def current_model(self) -> str | None:
        option = self.option_in("model")
        if option is not None and isinstance(option.current_value, str):
            return option.current_value
        return self.model_id

    # --- the session/update kinds that carry it (called by the turn collector) ---------

    def mode_update(self, update: dict[str, Any]) -> None:
        mode = update.get("currentModeId")
        if not isinstance(mode, str):
            raise TypeError("currentModeId must be a string")
        self.mode_id = mode

    def config_option_update(self, update: dict[str, Any]) -> None:
        options = update.get("configOptions")
        if not isinstance(options, list):
            raise TypeError("configOptions must be a list")
        options = read_config_options(self.version, options)  # TypeError: skipped, counted
        self.config_options = [ConfigOption.model_validate(o) for o in options]

    def session_info_update(self, update: dict[str, Any]) -> None:
        # Only changed fields are sent; an explicit null clears one.
        if "title" in update:
            title = update["title"]
            self.title = title if isinstance(title, str) else None
        if "updatedAt" in update:
            stamp = update["updatedAt"]
            self.updated_at = stamp if isinstance(stamp, str) else None

    def commands_update(self, update: dict[str, Any]) -> None:
        commands = update.get("availableCommands")
        if not isinstance(commands, list):
            raise TypeError("availableCommands must be a list")
        self.commands = [str(c["name"]) for c in commands if isinstance(c, dict) and "name" in c]
