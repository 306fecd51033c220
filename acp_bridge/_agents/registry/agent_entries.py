"""The ACP registry's ``registry.json``, read: ``{"version", "agents": [...], "extensions"}``,
each agent an ``id``, ``name``, ``version``, ``description`` and a ``distribution`` of
``npx`` (an npm package, as ``npx`` names it: ``@scope/name@1.2.3``), ``uvx`` (a PyPI
package: ``name==1.2.3`` or ``name@1.2.3``) and/or ``binary`` (per platform an ``archive``
URL and the ``cmd`` in it), each with ``args`` and ``env``.

The registry's own schema allows no digest; a ``sha256`` beside a binary target's archive
(a registry file of one's own) is checked when present. Keys the bridge does not use are
ignored (the registry may grow), the ones it uses are checked, and an error names the entry.
"""

import platform
import re
import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from acp_bridge.config._package import PackageSpec
from acp_bridge.errors import ConfigError

Kind = Literal["npx", "uvx", "binary"]
KINDS: tuple[Kind, ...] = ("npx", "uvx", "binary")
"""The order an install prefers when an entry offers several: a package manager's lockfile
and hashes before an archive the registry gives no digest for."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class PackageDistribution(_Model):
    package: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)


class BinaryTarget(_Model):
    archive: str = Field(pattern=r"^https?://\S+$")
    cmd: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    sha256: str | None = Field(None, pattern=r"^[0-9a-fA-F]{64}$")


class Distribution(_Model):
    npx: PackageDistribution | None = None
    uvx: PackageDistribution | None = None
    binary: dict[str, BinaryTarget] | None = None


class RegistryAgent(_Model):
    id: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    name: str = Field(min_length=1)
    version: str = Field(pattern=r"^\d+\.\d+\.\d+")
    description: str = ""
    repository: str | None = None
    authors: list[str] = Field(default_factory=list)
    license: str | None = None
    distribution: Distribution

    def kinds(self) -> list[Kind]:
        return [kind for kind in KINDS if getattr(self.distribution, kind) is not None]


class Registry(_Model):
    version: str
    agents: list[RegistryAgent]

    def get(self, agent_id: str) -> RegistryAgent | None:
        return next((a for a in self.agents if a.id == agent_id), None)


def parse_registry(data: Any, where: str) -> Registry:
    """The registry in ``data`` (parsed JSON), or a ConfigError naming ``where`` and, for a
    bad agent, its index and id."""
    if not isinstance(data, dict) or not isinstance(data.get("agents"), list):
        raise ConfigError(f"{where}: not an ACP registry (a JSON object with an agents list)")
    agents = []
    for index, item in enumerate(data["agents"]):
        try:
            agents.append(RegistryAgent.model_validate(item))
        except ValidationError as exc:
            named = item.get("id") if isinstance(item, dict) else None
            entry = f"agents[{index}]" + (f" ({named!r})" if isinstance(named, str) else "")
            said = [
                f"{'.'.join(str(part) for part in e['loc']) or '(the entry)'}: {e['msg']}"
                for e in exc.errors()
            ]
            raise ConfigError(f"{where}: {entry}: {'; '.join(said)}") from exc
    ids = [a.id for a in agents]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ConfigError(f"{where}: agent ids listed twice: {', '.join(twice)}")
    return Registry(version=str(data.get("version", "")), agents=agents)


def this_platform() -> str:
    """This machine as the registry names platforms (``linux-x86_64``, ``darwin-aarch64``)."""
    system = {"linux": "linux", "darwin": "darwin", "win32": "windows"}.get(sys.platform)
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}
    return f"{system or sys.platform}-{arch.get(machine, machine)}"


class Derived(_Model):
    """What an entry says for one way to install it: the pinned package, its arguments and
    environment, and the command (None: the package's own, found once installed)."""

    kind: Kind
    spec: PackageSpec
    args: list[str]
    env: dict[str, str]
    command: str | None


def derive(agent: RegistryAgent, kind: Kind | None = None) -> Derived:
    """The first way of :data:`KINDS` the entry offers (or ``kind``) for this platform."""
    where = f"registry agent {agent.id!r}"
    kinds = [kind] if kind is not None else agent.kinds()
    for each in kinds:
        if each == "binary" and agent.distribution.binary is not None:
            target = agent.distribution.binary.get(this_platform())
            if target is None:
                offered = ", ".join(sorted(agent.distribution.binary))
                raise ConfigError(
                    f"{where} has no archive for this platform ({this_platform()}); it has "
                    f"one for {offered}"
                )
            spec = _spec(
                where,
                binary=agent.id,
                version=agent.version,
                archive=target.archive,
                cmd=target.cmd,
                sha256=target.sha256.lower() if target.sha256 else None,
            )
            binary = target.cmd.rsplit("/", 1)[-1]
            return Derived(kind=each, spec=spec, args=target.args, env=target.env, command=binary)
        package = getattr(agent.distribution, each)
        if package is not None:
            name, version = _split(package.package, each, agent.version)
            field = "npm" if each == "npx" else "pypi"
            spec = _spec(where, **{field: name, "version": version})
            own = None if each == "npx" else name  # uvx runs the command named as its package
            return Derived(kind=each, spec=spec, args=package.args, env=package.env, command=own)
    raise ConfigError(f"{where} offers no {kind} distribution (it has {', '.join(agent.kinds())})")


def _split(package: str, kind: Kind, fallback: str) -> tuple[str, str]:
    """``@scope/name@1.2.3`` (npx), ``name==1.2.3`` or ``name@1.2.3`` (uvx): the name and the
    version; no version given: the entry's own."""
    if kind == "uvx" and "==" in package:
        name, version = package.split("==", 1)
        return name, version
    found = re.fullmatch(r"(@?[^@]+)(?:@(.+))?", package)
    if found is None:
        return package, fallback
    return found.group(1), found.group(2) or fallback


def _spec(where: str, **fields: Any) -> PackageSpec:
    try:
        return PackageSpec.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        what = f" {field}" if field else ""
        raise ConfigError(f"{where}: its package{what}: {first['msg']}") from exc
