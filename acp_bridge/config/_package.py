"""The ``package:`` of a profile: the npm or PyPI package that provides its command, pinned.

``acp-bridge agents install NAME`` installs exactly this version into a managed prefix under
the user's data directory (no global install, no sudo), and the profile then finds its
command there. The versions of the built-in profiles are the ones their notes say were
checked; they are bumped on purpose, in the profile file, never picked by the installer.
"""

import re
from typing import Annotated, Self

from pydantic import AfterValidator, ConfigDict, Field, model_validator

from acp_bridge.config._fields import StrictModel


def _exact_version(version: str) -> str:
    if not re.fullmatch(r"\d+(\.\d+){1,3}([-.+]?[A-Za-z0-9.]+)?", version):
        raise ValueError(f"must be one exact version (e.g. 0.16.0), not a range: got {version!r}")
    return version


def _package_name(name: str) -> str:
    # npm: optional @scope/ then a name; PyPI: letters, digits, . _ -. No version, no URL.
    if not re.fullmatch(r"(@[a-z0-9][a-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ValueError(f"must be a package name (no version, no URL): got {name!r}")
    return name


PackageName = Annotated[str, AfterValidator(_package_name)]


class PackageSpec(StrictModel):
    """Where the profile's command comes from: one npm or one PyPI package, one version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    npm: PackageName | None = Field(None, description="the npm package (e.g. opencode-ai)")
    pypi: PackageName | None = Field(None, description="the PyPI package (e.g. fast-agent-mcp)")
    version: Annotated[str, AfterValidator(_exact_version)] = Field(
        description="the exact version installed (bumped on purpose, never a range)"
    )
    node: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="npm: the oldest Node.js major version it runs on; an older (or no) node "
        "on PATH gets that Node from npm, installed beside the package",
    )
    python: str | None = Field(
        None,
        pattern=r"^3\.\d{1,2}$",
        description="PyPI: the oldest Python it runs on (e.g. 3.12); default: the bridge's own",
    )

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.npm is None) == (self.pypi is None):
            raise ValueError("name exactly one of npm or pypi")
        if self.npm is None and self.node is not None:
            raise ValueError("node applies to npm packages only")
        if self.pypi is None and self.python is not None:
            raise ValueError("python applies to PyPI packages only")
        return self

    @property
    def manager(self) -> str:
        return "npm" if self.npm is not None else "pypi"

    @property
    def name(self) -> str:
        return self.npm or self.pypi or ""

    def __str__(self) -> str:
        return f"{self.manager} {self.name}@{self.version}"
