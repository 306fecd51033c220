"""The one exception tree of acp-bridge.

Library code raises these; the entry points (``acp_spawn``, ``spawn``, ``bash``) turn
them into a failed :class:`~acp_bridge.envelope.SubtaskResult` whose ``meta.error_code``
is the exception's ``code``; the CLI maps them to exit codes. Nothing else is raised on
purpose from inside the package.

::

    BridgeError
    ├── ConfigError                 config_error      bad config file, profile or argument
    │   ├── ProfileError            config_error      a problem inside one agent profile
    │   ├── UnknownProfileError     config_error      no profile of that name
    │   ├── NotOffered              config_error      the caller asked explicitly for what the
    │   │                                             agent does not offer (a method, a mode,
    │   │                                             a model, an option value)
    │   ├── DirtyWorkingTree        config_error      changes were to be applied to a working
    │   │                                             tree that has changes of its own
    │   └── StateDirError           config_error      the bridge's own folder (the state
    │                                                 directory) cannot be used: read-only,
    │                                                 full, a file, a planted symlink
    ├── DepthLimitError             depth_limit       a subtask tried to open another level
    ├── OutputSchemaError           output_schema     structured output missing or invalid
    ├── SandboxViolation            sandbox_violation a request reached outside its roots
    ├── LimitExceeded               limit_exceeded    a request or input went past a size limit
    ├── RunTimeout                  timeout           a phase ran past its deadline
    │   └── RunStalled              stalled           a turn showed no progress for
    │                                                 timeouts.stall seconds
    ├── RunCancelled                cancelled         the caller cancelled the run
    ├── RunStoreError               internal_error    the run store (SQLite) failed or is unusable
    ├── TurnLimitError              max_turn_requests a local model loop used up its requests
    ├── ExecutorError               executor_error    a batch executor cannot run the task (an
    │                                                 unreachable cluster, no node offers its
    │                                                 agent, a broken runtime environment)
    ├── NodeLost                    node_lost         the node running a task died or stopped
    │                                                 answering (the bridge's own deadline)
    ├── ModelError                  model_error       a model endpoint failed or answered nonsense
    └── AgentError                  (abstract)        the external agent misbehaved
        ├── SpawnError              spawn_failed      could not start the agent process
        ├── AgentExitedError        agent_exited      the agent process died mid-run
        ├── ProtocolError           protocol_error    the agent broke the wire protocol
        ├── AuthRequiredError       auth_required     the agent needs a login we cannot do
        └── AgentRequestError       agent_error       the agent answered a request with an error
"""

from enum import StrEnum
from pathlib import Path
from typing import NamedTuple


class ErrorCode(StrEnum):
    """The vocabulary of ``meta.error_code`` (docs/explanation/envelope.md, what is stable). It may
    grow; it never shrinks."""

    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    REFUSAL = "refusal"
    MAX_TOKENS = "max_tokens"
    MAX_TURN_REQUESTS = "max_turn_requests"
    AGENT_EXITED = "agent_exited"
    AGENT_ERROR = "agent_error"
    SPAWN_FAILED = "spawn_failed"
    PROTOCOL_ERROR = "protocol_error"
    AUTH_REQUIRED = "auth_required"
    OUTPUT_SCHEMA = "output_schema"
    DEPTH_LIMIT = "depth_limit"
    CONFIG_ERROR = "config_error"
    SANDBOX_VIOLATION = "sandbox_violation"
    NONZERO_EXIT = "nonzero_exit"
    MODEL_ERROR = "model_error"
    LIMIT_EXCEEDED = "limit_exceeded"
    LOST = "lost"
    BUDGET = "budget"
    STALLED = "stalled"
    EXECUTOR_ERROR = "executor_error"
    NODE_LOST = "node_lost"
    INTERNAL_ERROR = "internal_error"


class BridgeError(Exception):
    """Root of every error acp-bridge raises on purpose."""

    code: ErrorCode = ErrorCode.INTERNAL_ERROR


# Named tuples, not frozen dataclasses: those compile six methods each as the module loads
# (every command's start-up).
class SourceLocation(NamedTuple):
    """Where in a YAML file a value (or key) sits. ``line`` and ``column`` are 1-based."""

    path: Path
    line: int
    column: int

    def __str__(self) -> str:
        return f"{_display_path(self.path)}:{self.line}:{self.column}"


def _display_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it (shorter errors)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except (ValueError, OSError):  # outside the cwd, or the cwd itself is gone
        return str(path)


class Problem(NamedTuple):
    """One precise complaint about a config file: where, which field, what is wrong."""

    message: str
    location: SourceLocation | None = None
    field: str = ""

    def __str__(self) -> str:
        parts = [str(self.location)] if self.location else []
        if self.field:
            parts.append(self.field)
        parts.append(self.message)
        return ": ".join(parts)


class ConfigError(BridgeError):
    """A config file, profile or argument is wrong. Carries every problem found."""

    code = ErrorCode.CONFIG_ERROR

    def __init__(self, problems: list[Problem] | str) -> None:
        self.problems = [Problem(problems)] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class ProfileError(ConfigError):
    """A problem inside one agent profile (the profile cannot be used)."""


class UnknownProfileError(ConfigError):
    """No agent profile has the requested name."""


class NotOffered(ConfigError):
    """The caller asked explicitly for something the agent does not offer: a session method
    (``session/resume`` …), or a mode, model or config option value. The message lists what
    the agent does offer. (The same setting from a profile is only a warning.)"""


class DirtyWorkingTree(ConfigError):
    """``compare`` was asked to apply the winner's changes to a working tree that is not
    clean: the message names its changed and untracked files."""


class StateDirError(ConfigError):
    """The folder where the bridge keeps its own files (the state directory, its parse
    cache) cannot be used: read-only, full, a file where a folder should be (``HOME`` is a
    file), or a symlink planted inside it. The message names the path; the fix is the
    environment (``XDG_STATE_HOME``) or the path itself."""


class DepthLimitError(BridgeError):
    """A run inside a subtask tried to open another subtask level."""

    code = ErrorCode.DEPTH_LIMIT


class OutputSchemaError(BridgeError):
    """The worker's answer is not the JSON the caller's ``output_schema`` asks for."""

    code = ErrorCode.OUTPUT_SCHEMA


class SandboxViolation(BridgeError):
    """A file or terminal request reached outside the roots it was given."""

    code = ErrorCode.SANDBOX_VIOLATION


class LimitExceeded(BridgeError):
    """A request or an input went past a size or count limit (the limit is in the message)."""

    code = ErrorCode.LIMIT_EXCEEDED


class RunTimeout(BridgeError):
    """A phase (startup, session, run, command) ran past its deadline."""

    code = ErrorCode.TIMEOUT


class RunStalled(RunTimeout):
    """A turn showed no progress (no update, no request) for ``timeouts.stall`` seconds."""

    code = ErrorCode.STALLED


class RunCancelled(BridgeError):
    """The caller cancelled the run."""

    code = ErrorCode.CANCELLED


class RunStoreError(BridgeError):
    """The run store could not be read or written (a locked, full or damaged SQLite file)."""

    code = ErrorCode.INTERNAL_ERROR


class TurnLimitError(BridgeError):
    """A local model loop (``spawn``, ``ask``) made as many model requests as it may."""

    code = ErrorCode.MAX_TURN_REQUESTS


class ExecutorError(BridgeError):
    """A batch executor cannot run a task at all: its cluster is unreachable, no live node
    offers the task's agent, its runtime environment cannot be set up
    (docs/explanation/batches.md)."""

    code = ErrorCode.EXECUTOR_ERROR


class NodeLost(BridgeError):
    """The node a task ran on died, or stopped answering before the task's own deadline
    plus a grace: whatever the task did there is unknown (docs/explanation/batches.md,
    a lost node)."""

    code = ErrorCode.NODE_LOST


class ModelError(BridgeError):
    """A model endpoint failed (HTTP error, unreachable) or answered something unusable."""

    code = ErrorCode.MODEL_ERROR


class AgentError(BridgeError):
    """The external agent process misbehaved; subclasses say how."""

    code = ErrorCode.AGENT_ERROR


class SpawnError(AgentError):
    """The agent process could not be started (missing command, not executable, …)."""

    code = ErrorCode.SPAWN_FAILED


class AgentExitedError(AgentError):
    """The agent process exited before the run was over."""

    code = ErrorCode.AGENT_EXITED


class ProtocolError(AgentError):
    """The agent sent something the protocol does not allow (or too much of it)."""

    code = ErrorCode.PROTOCOL_ERROR


class MalformedReply(ProtocolError):
    """A reply to one of the bridge's requests that does not validate against the protocol
    version spoken (under ``protocol: auto``, before any prompt, a v2 one restarts the agent
    on v1: docs/explanation/acp.md)."""


class AuthRequiredError(AgentError):
    """The agent needs authentication the bridge cannot perform headless."""

    code = ErrorCode.AUTH_REQUIRED


class AgentRequestError(AgentError):
    """The agent answered one of our requests with a JSON-RPC error."""

    code = ErrorCode.AGENT_ERROR

    def __init__(
        self, method: str, rpc_code: int, rpc_message: str, data: object = None, note: str = ""
    ) -> None:
        self.method = method
        self.rpc_code = rpc_code
        self.rpc_message = rpc_message
        self.data = data
        detail = f": {data}" if data not in (None, "", {}, []) else ""
        said = f"agent answered {method} with error {rpc_code} {rpc_message}{detail}"
        super().__init__(said + note)  # note: what the bridge adds (the sandbox's part)
