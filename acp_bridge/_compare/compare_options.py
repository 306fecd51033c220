"""What ``compare`` takes, declared once: every option of ``acp_spawn`` (each attempt is an
``acp_spawn`` run) and its own. The Python API, the command line and the MCP tool derive
from :class:`CompareOptions` as the entries derive from theirs
(:mod:`acp_bridge._entries.options`), leaving out :data:`NOT_FOR_COMPARE`: what compare
sets for every attempt itself.
"""

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config

from acp_bridge._entries.option_errors import options_error
from acp_bridge._entries.options import AcpSpawnOptions, Offer, options_of
from acp_bridge._os.limits import MAX_COST, MAX_TOKENS
from acp_bridge.errors import ConfigError, Problem

MAX_ATTEMPTS = 32
"""Attempts per agent (``n``): each is an agent process and a worktree at once."""

Pick = Literal["verified", "fastest", "cheapest", "smallest"]

NOT_FOR_COMPARE = (
    "isolation",  # every attempt works in a worktree of its own
    "keep_worktree",  # --keep says
    "worktree",
    "resume",  # every attempt opens a session of its own
    "fork",
    "task_id",  # every attempt has an id of its own
    "observe_profile",  # compare reports attempts, not their live events
)
"""``acp_spawn``'s options that compare sets for every attempt: not given by its caller."""


@with_config(ConfigDict(extra="forbid"))
class CompareOptions(AcpSpawnOptions, total=False):
    """The options of ``compare``: ``acp_spawn``'s for every attempt (but those compare sets
    for each attempt itself, :data:`NOT_FOR_COMPARE`), and these."""

    n: Annotated[
        int,
        Field(1, ge=1, le=MAX_ATTEMPTS, description="attempts per agent"),
        Offer(cli="--n", metavar="K", mcp=True),
    ]
    verify: Annotated[
        str | None,
        Field(
            None,
            min_length=1,
            description="a shell command run on each attempt's changes (in a fresh worktree, "
            "in its agent's sandbox, under its terminal timeout); exit 0 verifies the attempt",
        ),
        Offer(cli="--verify", metavar="CMD", mcp=True),
    ]
    pick: Annotated[
        Pick | None,
        Field(
            None,
            description="which attempt wins among those that ended done (and passed the "
            "verifier, when there is one): verified (the fastest of those), fastest, "
            "cheapest, smallest (fewest changed lines); default: verified with a verifier, "
            "else fastest",
        ),
        Offer(cli="--pick", metavar="HOW", mcp=True),
    ]
    apply: Annotated[
        bool,
        Field(
            False,
            description="apply the winner's diff to the working tree (refused unless it is clean)",
        ),
        Offer(cli="--apply", mcp=True),
    ]
    dry_run: Annotated[
        bool,
        Field(False, description="with apply: show the winner's patch, change nothing"),
        Offer(cli="--dry-run", mcp=True),
    ]
    keep: Annotated[
        bool,
        Field(
            False,
            description="keep every attempt's worktree and branch acp-bridge/<task_id> (default: "
            "all are removed; the winner's changes stay as its diff)",
        ),
        Offer(cli="--keep", mcp=True),
    ]
    max_tokens: Annotated[
        int | None,
        Field(
            None,
            ge=1,
            le=MAX_TOKENS,
            description="tokens all attempts together may use: past it the attempts still "
            "running are cancelled (budget)",
        ),
        Offer(cli="--max-tokens", metavar="N", mcp=True),
    ]
    max_cost: Annotated[
        float | None,
        Field(
            None,
            gt=0,
            le=MAX_COST,
            description="cost all attempts together may reach (as the agents report it)",
        ),
        Offer(cli="--max-cost", metavar="X", mcp=True),
    ]


OWN = tuple(
    name for name in CompareOptions.__annotations__ if name not in AcpSpawnOptions.__annotations__
)
"""compare's own options (the rest are ``acp_spawn``'s)."""
_ADAPTER: TypeAdapter[Any] = TypeAdapter(CompareOptions)


def check_compare_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` checked, defaults filled in. :class:`ConfigError`, a problem per bad
    option, each naming it; a name that is no option of compare is a ``TypeError``, as for
    any function."""
    names = {option.name for option in options_of(CompareOptions)}
    for name in options:
        if name not in names:
            raise TypeError(f"compare() got an unexpected keyword argument {name!r}")
    refused = [name for name in options if name in NOT_FOR_COMPARE]
    if refused:
        why = "compare sets it for every attempt"
        raise ConfigError([Problem(why, field=name) for name in refused])
    try:
        checked = dict(_ADAPTER.validate_python(dict(options)))
    except ValidationError as exc:
        raise options_error(exc) from None
    if checked.get("pick") == "verified" and checked.get("verify") is None:
        raise ConfigError([Problem("verified needs a verifier (verify)", field="pick")])
    if checked.get("dry_run") and not checked.get("apply"):
        why = "only with apply (it shows what apply would do)"
        raise ConfigError([Problem(why, field="dry_run")])
    return checked


def attempt_options(checked: Mapping[str, Any]) -> dict[str, Any]:
    """The ``acp_spawn`` options every attempt runs with (those given; not ``cwd``, which
    compare resolves to the caller's place in the repository)."""
    own = (*OWN, *NOT_FOR_COMPARE, "cwd")
    return {name: value for name, value in checked.items() if name not in own and value is not None}


def pick_of(checked: Mapping[str, Any]) -> Pick:
    """The pick asked for, else the default (verified with a verifier, else fastest)."""
    given: Pick | None = checked.get("pick")
    if given is not None:
        return given
    return "verified" if checked.get("verify") is not None else "fastest"
