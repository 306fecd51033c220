"""Which advertised auth method a headless bridge can use, and why not
(docs/explanation/acp.md, what is advertised).

A method of type ``terminal`` needs a person at a terminal: never attempted, the error says
the command to run. An ``env_var`` method needs its variables in the agent's environment.
An ``agent`` method (the default type) is the agent's own login flow, which may open a
browser: only used when the profile names it. An agent that takes the prompt's -32000 as its
answer (claude-agent-acp, fast-agent: ``session/new`` works without a key) is told apart
by :func:`auth_refused_prompt`. Every auth error ends with :func:`auth_fix`: the variables
the profile's ``auth.env`` lists (what the agent's own methods name may be a browser login
only, as gemini's are), and where each one is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from acp_bridge._acp.wire.initialize_schema import AuthMethod
from acp_bridge.errors import AgentRequestError, AuthRequiredError


def why_not_headless(method: AuthMethod, command: str, env: Mapping[str, str]) -> str | None:
    """Why ``method`` cannot be used without a person (None: it can)."""
    if method.type == "terminal":
        line = " ".join([command, *method.args])
        return f"{method.id} needs an interactive login: run `{line}` in a terminal"
    missing = [v.name for v in method.vars if not v.optional and v.name not in env]
    if missing:
        link = f" ({method.link})" if method.link else ""
        return f"{method.id} needs {', '.join(missing)} in the agent's environment{link}"
    return None


def configured_method(methods: Sequence[AuthMethod], method_id: str) -> AuthMethod:
    """The advertised method the profile's ``auth.method`` names, or a clear error."""
    for method in methods:
        if method.id == method_id:
            return method
    offered = ", ".join(m.id for m in methods) or "none"
    raise AuthRequiredError(
        f"profile auth.method {method_id!r} is not offered by the agent (offered: {offered})"
    )


def headless_choice(
    methods: Sequence[AuthMethod], command: str, env: Mapping[str, str], fix: str
) -> AuthMethod:
    """After -32000: an advertised env-var method whose variables are present, or a clear
    error that says, for each method, what it would take, then ``fix`` (:func:`auth_fix`)."""
    reasons = []
    for method in methods:
        why_not = why_not_headless(method, command, env)
        if method.type == "env_var" and why_not is None:
            return method
        reasons.append(
            why_not
            or f"{method.id} ({method.name or 'agent-driven login'}) cannot be completed headless"
        )
    detail = "; ".join(reasons) or "the agent offers no auth methods"
    raise AuthRequiredError(f"the agent requires authentication: {detail}; {fix}")


def auth_refused_prompt(error: AgentRequestError, fix: str) -> AuthRequiredError:
    """The agent answered the prompt -32000 (auth required): the error names the fix."""
    said = f"the agent requires authentication: it answered session/prompt with {error.rpc_code}"
    return AuthRequiredError(f"{said} {error.rpc_message}; {fix}")


def auth_fix(
    variables: Sequence[str], agent_env: Mapping[str, str], host_env: Mapping[str, str]
) -> str:
    """What authenticates the agent, from the profile's ``auth.env`` (any one of them will
    do), and where each one is: set for the agent, set here but not passed, or neither."""
    if not variables:
        return (
            "the profile names no variable that authenticates it (auth.env): log the agent "
            "in its own way, or set its key and list it under auth.env and env_passthrough"
        )
    fixes = [f"set {' or '.join(variables)} (the profile's auth.env) for the agent"]
    for name in variables:
        if name in agent_env:
            fixes.append(f"{name} is set and the agent refused it: check its value")
        elif name in host_env:
            fixes.append(f"{name} is set here but not passed to the agent (env_passthrough)")
    return "; ".join(fixes)
