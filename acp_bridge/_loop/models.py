"""The model layer of the local loops: which model a run uses, and building it.

:func:`choose_model` is pure (config in, choice out) and cheap. :func:`build_model` turns the
choice into a pydantic-ai model: an OpenAI-compatible chat-completions endpoint, or the
offline passthrough model. Import this module only on the loop path: it imports pydantic-ai
(and, for a real endpoint, the OpenAI SDK): over a second on a cold start.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from acp_bridge._loop.passthrough import passthrough_model
from acp_bridge.config import PASSTHROUGH_MODEL, ModelEntry, ModelsConfig
from acp_bridge.errors import ConfigError

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from pydantic_ai.providers import Provider

# Sent when an entry names no key: the OpenAI SDK would otherwise fall back to
# $OPENAI_API_KEY and hand that key to whatever server base_url points at.
NO_KEY = "no-key"


@dataclass(frozen=True)
class ModelChoice:
    """The model a run uses (``entry`` None: the passthrough model), and why, if not asked."""

    name: str
    entry: ModelEntry | None
    warnings: tuple[str, ...] = ()


def choose_model(models: ModelsConfig, requested: str | None) -> ModelChoice:
    """``requested`` if the config knows it (an unknown name is a ConfigError: running an
    echo model in its place would report ``done`` for work nobody did), else the default."""
    warnings = []
    if requested and requested != PASSTHROUGH_MODEL and requested not in models.entries:
        known = ", ".join([PASSTHROUGH_MODEL, *sorted(models.entries)])
        raise ConfigError(
            f"unknown model {requested!r}; known models: {known}. Name it under models.entries "
            f"in the config (an OpenAI-compatible endpoint: docs/how-to/configure.md#models), "
            f"or use passthrough, the offline echo model"
        )
    name = requested or models.default
    if name == PASSTHROUGH_MODEL and not requested and "default" not in models.model_fields_set:
        warnings.append(
            "no model configured (models.default); using the offline passthrough model, "
            "which only echoes and follows ***CALL_TOOL directives"
        )
    return ModelChoice(name, models.entries.get(name), tuple(warnings))


def build_model(choice: ModelChoice, environ: Mapping[str, str] | None = None) -> Model:
    """The pydantic-ai model for ``choice``."""
    entry = choice.entry
    if entry is None:
        return passthrough_model()
    # Only a real endpoint needs the OpenAI SDK (~0.5 s more); smoke runs on the
    # passthrough model do without it.
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

    client = AsyncOpenAI(
        base_url=entry.base_url,
        api_key=_api_key(choice.name, entry, os.environ if environ is None else environ),
        timeout=entry.request_timeout,
        max_retries=entry.max_retries,
        default_headers=entry.headers or None,
    )
    provider: Provider[AsyncOpenAI] = (
        OpenAIProvider(openai_client=client)
        if entry.provider == "openai"
        else OpenAICompatibleProvider(choice.name, openai_client=client)
    )
    settings = ModelSettings()
    if entry.temperature is not None:
        settings["temperature"] = entry.temperature
    if entry.max_tokens is not None:
        settings["max_tokens"] = entry.max_tokens
    return OpenAIChatModel(entry.model, provider=provider, settings=settings or None)


def _api_key(name: str, entry: ModelEntry, environ: Mapping[str, str]) -> str:
    if entry.api_key is not None:
        return entry.api_key or NO_KEY
    if entry.api_key_env is None:
        return NO_KEY
    key = environ.get(entry.api_key_env, "")
    if not key:
        raise ConfigError(
            f"models.entries.{name}.api_key_env: environment variable {entry.api_key_env} "
            "is not set (or empty)"
        )
    return key
