"""Constructed environments: what a process we start sees of ours (DESIGN §5).

Agents, terminals and commands never get the whole host environment (it holds the host's
secrets): only a small base list, the profile's explicit variables, the host variables it
names for passing through, and the subtask level — ``ACP_BRIDGE_DEPTH`` and the limit in
``ACP_BRIDGE_MAX_DEPTH`` — so a bridge started inside refuses to go deeper than the limit
its host set.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

DEPTH_ENV = "ACP_BRIDGE_DEPTH"
MAX_DEPTH_ENV = "ACP_BRIDGE_MAX_DEPTH"
BASE_ENV_NAMES: tuple[str, ...] = ("PATH", "HOME", "LANG", "TERM", "USER", "SHELL", "TMPDIR")
BASE_ENV_PREFIXES: tuple[str, ...] = ("LC_",)


def constructed_env(
    *,
    depth: int,
    max_depth: int | None = None,
    extra: Mapping[str, str] | None = None,
    passthrough: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for a process started at subtask level ``depth`` on an agent's behalf
    (or for the agent itself). ``max_depth``: the limit that travels with it."""
    host = os.environ if environ is None else environ
    # Names first, values only for the few kept: ``os.environ`` decodes every item it hands
    # out, and a run of a fan-out pays this once per agent it starts.
    names = [name for name in host if name in BASE_ENV_NAMES or name.startswith(BASE_ENV_PREFIXES)]
    env = {name: host[name] for name in names}
    env.setdefault("PATH", os.defpath)  # a host without PATH: commands still resolve
    env.update({name: host[name] for name in passthrough if name in host})
    env.update(extra or {})
    env[DEPTH_ENV] = str(depth)
    if max_depth is not None:  # the limit travels with the depth: a nested bridge cannot raise it
        env[MAX_DEPTH_ENV] = str(max_depth)
    return env
