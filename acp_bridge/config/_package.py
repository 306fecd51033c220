"""The ``package:`` of a profile: the npm or PyPI package, or the downloaded archive, that
provides its command, pinned.

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


def _archive_path(cmd: str) -> str:
    # A path inside the unpacked archive: never out of it, never absolute.
    parts = cmd.split("/")
    if cmd.startswith("/") or ".." in parts or not parts[-1] or parts[-1] == ".":
        raise ValueError(f"must be a file's path inside the archive (e.g. ./agent): got {cmd!r}")
    return cmd


class PackageSpec(StrictModel):
    """Where the profile's command comes from: one npm or one PyPI package, or one archive
    downloaded and unpacked (an ACP registry ``binary`` entry), one version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    npm: PackageName | None = Field(None, description="the npm package (e.g. opencode-ai)")
    pypi: PackageName | None = Field(None, description="the PyPI package (e.g. fast-agent-mcp)")
    binary: PackageName | None = Field(
        None, description="an archive to download and unpack: the agent's name (e.g. codex-acp)"
    )
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

    archive: str | None = Field(
        None,
        pattern=r"^https?://[^\s]+$",
        description="binary: the archive's URL (.tar.gz, .tgz, .tar.xz, .tar.bz2 or .zip)",
    )
    cmd: Annotated[str, AfterValidator(_archive_path)] | None = Field(
        None, description="binary: the command's path inside the archive (e.g. ./codex-acp)"
    )
    sha256: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{64}$",
        description="binary: the archive's sha256 (hex); a download that differs is refused",
    )

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if [self.npm, self.pypi, self.binary].count(None) != 2:
            raise ValueError("name exactly one of npm, pypi or binary")
        if (self.binary is None) != (self.archive is None) or (self.binary is None) != (
            self.cmd is None
        ):
            raise ValueError("binary needs archive and cmd, and only binary has them")
        if self.binary is None and self.sha256 is not None:
            raise ValueError("sha256 applies to binary archives only")
        if self.npm is None and self.node is not None:
            raise ValueError("node applies to npm packages only")
        if self.pypi is None and self.python is not None:
            raise ValueError("python applies to PyPI packages only")
        return self

    @property
    def manager(self) -> str:
        return "npm" if self.npm is not None else "pypi" if self.pypi is not None else "binary"

    @property
    def name(self) -> str:
        return self.npm or self.pypi or self.binary or ""

    def __str__(self) -> str:
        return f"{self.manager} {self.name}@{self.version}"
