"""JSON Schemas of the config file and of a profile file, for editors."""

from __future__ import annotations

from typing import Any

from acp_bridge.config._profile import AgentProfile
from acp_bridge.config._settings import Config


def profile_json_schema() -> dict[str, Any]:
    """JSON Schema of one profile file: ``command`` may be omitted (to override a built-in)
    and ``name`` too (a profile file's name is its file name)."""
    schema = AgentProfile.model_json_schema()
    schema["required"] = [r for r in schema.get("required", []) if r not in ("command", "name")]
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "acp-bridge agent profile"
    return schema


def config_json_schema() -> dict[str, Any]:
    """JSON Schema of the config file, with ``acp.agents`` items typed as profiles."""
    schema = Config.model_json_schema()
    profile = profile_json_schema()
    defs = schema.setdefault("$defs", {})
    defs.update(profile.pop("$defs", {}))
    profile.pop("$schema")
    defs["AgentProfile"] = profile
    defs["AcpSection"]["properties"]["agents"]["items"] = {"$ref": "#/$defs/AgentProfile"}
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "acp-bridge configuration"
    return schema
