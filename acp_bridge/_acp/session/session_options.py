"""Setting a session's mode, model and config options (each only if advertised:
docs/explanation/acp.md, mode, model and config options).

Two sources, one rule each:

- the profile's ``session:`` settings hold for every run of the agent, whatever version is
  installed: a value the agent does not offer is a warning in ``meta.warnings`` and the run
  goes on with the agent's default;
- a per-call value (``--mode``, ``--model``, ``--set``; ``acp_spawn(mode=, model=,
  config_options=)``) is what this caller asked for right now: a value that cannot be applied
  is an error (:class:`~acp_bridge.errors.NotOffered`) that lists what the agent offers.
  A per-call value replaces the profile's for the same setting.

How each is set, in the order the spec prefers:

- mode: a config option of category ``mode`` (config options supersede modes), else
  ``session/set_mode`` from the ``modes`` the session reply listed;
- model: a config option of category ``model``, else the older ``models`` list with
  ``session/set_model`` (removed from ACP's unstable schema, still sent by gemini-cli and
  qwen-code);
- config options by id: ``select`` values must be offered values; ``boolean`` options take
  true/false (``--set fast=true``), and exist only because we advertise
  ``session.configOptions.boolean``.

Mode first, then model, then the options, because a model change may change the options.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from acp_bridge._acp.turn.session_state import SessionState
from acp_bridge._acp.wire.schema import (
    ConfigOption,
    SetConfigOptionParams,
    SetConfigOptionResult,
    SetModeParams,
    Wire,
)
from acp_bridge._acp.wire.session_schema import SetModelParams
from acp_bridge._acp.wire.versions import setup_reply
from acp_bridge.errors import NotOffered

OptionValue = str | bool | int | float
Requester = Callable[[str, Wire], Awaitable[Any]]

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


class SessionChoices:
    """Mode, model and config option values for a session; None / empty: leave as is."""

    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = ("mode", "model", "options", "system_prompt")

    def __init__(
        self,
        mode: str | None = None,
        model: str | None = None,
        options: Mapping[str, OptionValue] | None = None,
        system_prompt: str | None = None,
    ) -> None:
        self.mode = mode
        self.model = model
        self.options: Mapping[str, OptionValue] = {} if options is None else options
        # Sent with the session's setup (not set after it); the call's replaces the profile's.
        self.system_prompt = system_prompt


def as_boolean(value: OptionValue) -> bool | None:
    """``value`` as a boolean option's value (``true``/``false``, yes/no, on/off, 1/0)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text in _TRUE else False if text in _FALSE else None


def _select_text(value: OptionValue) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _listed(values: list[str]) -> str:
    return ", ".join(values) or "none"


class SessionOptions:
    """Applies :class:`SessionChoices` to one session, through ``request``."""

    def __init__(
        self, request: Requester, session_id: str, state: SessionState, warnings: list[str]
    ) -> None:
        self._request = request
        self._session_id = session_id
        self._state = state
        self._warnings = warnings

    async def apply(self, profile: SessionChoices, call: SessionChoices) -> None:
        if call.mode is not None:
            await self._mode(call.mode, "--mode")
        elif profile.mode is not None:
            await self._mode(profile.mode, None)
        if call.model is not None:
            await self._model(call.model, "--model")
        elif profile.model is not None:
            await self._model(profile.model, None)
        for option_id, value in profile.options.items():
            if option_id not in call.options:
                await self._option(option_id, value, None)
        for option_id, value in call.options.items():
            await self._option(option_id, value, f"--set {option_id}")

    def _refuse(self, setting: str, flag: str | None, problem: str) -> None:
        """An explicit value that cannot be applied is an error; a profile's, a warning."""
        if flag is not None:
            raise NotOffered(f"{flag}: {problem}")
        self._warnings.append(f"session.{setting}: {problem}; left as it is")

    async def _mode(self, mode: str, flag: str | None) -> None:
        option = self._state.option_in("mode")
        if option is not None and option.type == "select" and mode in option.allowed_values():
            await self._set_option(option, mode)
            return
        modes = self._state.modes
        offered = [m.id for m in modes.available_modes] if modes else []
        if mode in offered:
            await self._request(
                "session/set_mode", SetModeParams(session_id=self._session_id, mode_id=mode)
            )
            self._state.mode_id = mode
            return
        if option is not None:
            offered = list(dict.fromkeys([*option.allowed_values(), *offered]))
        self._refuse("mode", flag, f"mode {mode!r} is not offered (offered: {_listed(offered)})")

    async def _model(self, model: str, flag: str | None) -> None:
        option = self._state.option_in("model")
        if option is not None and option.type == "select":
            allowed = option.allowed_values()
            if model in allowed:
                await self._set_option(option, model)
            else:
                problem = f"model {model!r} is not offered (offered: {_listed(allowed)})"
                self._refuse("model", flag, problem)
            return
        models = self._state.models
        if models is not None and models.available_models:
            offered = [m.model_id for m in models.available_models]
            if model not in offered:
                problem = f"model {model!r} is not offered (offered: {_listed(offered)})"
                self._refuse("model", flag, problem)
                return
            await self._request(
                "session/set_model", SetModelParams(session_id=self._session_id, model_id=model)
            )
            self._state.model_id = model
            return
        self._refuse("model", flag, f"model {model!r}: the agent offers no model choice")

    async def _option(self, option_id: str, value: OptionValue, flag: str | None) -> None:
        setting = f"config_options.{option_id}"
        options = self._state.options()
        option = options.get(option_id)
        if option is None:
            problem = (
                f"config option {option_id!r} is not offered (offered: {_listed(list(options))})"
            )
            self._refuse(setting, flag, problem)
            return
        if option.type == "boolean":
            flag_value = as_boolean(value)
            if flag_value is None:
                self._refuse(setting, flag, f"{option_id} wants true or false, got {value!r}")
                return
            await self._set_option(option, flag_value)
        elif option.type == "select":
            text, allowed = _select_text(value), option.allowed_values()
            if allowed and text not in allowed:
                problem = f"{option_id} {text!r} is not offered (offered: {_listed(allowed)})"
                self._refuse(setting, flag, problem)
                return
            await self._set_option(option, text)
        else:
            problem = f"{option_id} is of type {option.type!r}, which acp-bridge cannot set"
            self._refuse(setting, flag, problem)

    async def _set_option(self, option: ConfigOption, value: str | bool) -> None:
        v2 = self._state.version == 2
        params = SetConfigOptionParams(
            session_id=self._session_id,
            config_id=option.id,
            value=value,
            # v1 tags a boolean only; v2 every value, a select's as its value id
            type="boolean" if isinstance(value, bool) else "id" if v2 else None,
        )
        method = "session/set_config_option"
        raw = await self._request(method, params)
        reply = setup_reply(self._state.version, SetConfigOptionResult, raw, method)
        if reply.config_options:  # the complete state, dependent changes included
            self._state.config_options = list(reply.config_options)
