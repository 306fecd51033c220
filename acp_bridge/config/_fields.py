"""The field types every config model shares: strict models, existing paths, names.

A check here runs where the value is read, so its error carries the value's file:line
(config/_yaml/located.py locates it).
"""

import re
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field

from acp_bridge._os.limits import MAX_SECONDS
from acp_bridge._records.numbers import NumbersNotBooleans


class StrictModel(NumbersNotBooleans):
    """Unknown keys are errors, never silently ignored; a boolean is never a number
    (``_records/numbers.py``: the one check the wire shapes share)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _existing_dir(path: Path) -> Path:
    if not path.exists():
        raise ValueError(f"directory does not exist: {path}")
    if not path.is_dir():
        raise ValueError(f"not a directory: {path}")
    return path


def program(command: str) -> str:
    """A command that names a directory by its absolute path is refused here, at its line
    (a name found on PATH, or a relative path, is looked up when the agent starts)."""
    path = Path(command).expanduser()
    if path.is_absolute() and path.is_dir():
        raise ValueError(f"{command} is a directory, not a program to run")
    return command


def _existing_file(path: Path) -> Path:
    if not path.is_file():
        raise ValueError(f"file does not exist: {path}")
    return path


def profile_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", name):
        raise ValueError(
            f"must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit; "
            f"got {name!r}"
        )
    return name


def _env_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(
            f"must be an environment variable name (letters, digits, '_'; no leading digit); "
            f"got {name!r}"
        )
    return name


ExistingDir = Annotated[Path, AfterValidator(_existing_dir)]
ExistingFile = Annotated[Path, AfterValidator(_existing_file)]
PositiveSeconds = Annotated[float, Field(gt=0, le=MAX_SECONDS)]
Name = Annotated[str, AfterValidator(profile_name)]
EnvName = Annotated[str, AfterValidator(_env_name)]
