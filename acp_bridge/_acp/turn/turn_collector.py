"""The ``session/update`` stream of one session, gathered for the envelope
(docs/explanation/acp.md, the answer).

:class:`TurnCollector` reads the stream (the hot path: plain dict access, no models for
message chunks). Message chunks are grouped by ``messageId``; an agent that sends none gets a
new message after every tool call. The answer of a turn is its **last** agent message:
narration before tool calls is not the answer. A message's chunks are joined into blocks as
they come (messages.py), so its memory grows with its text, not with its chunks.

One turn model for both wire versions: every stable v1 update kind (to schema 1.34) and
every v2 one feed it. Message and thought chunks; v2's whole-message upserts
(``agent_message``: content missing = unchanged, null = cleared); tool calls (v1
``tool_call``, and ``tool_call_update`` creating an unknown id as v2 wants, explicit nulls
resetting a field, ``tool_call_content_chunk`` appending content); plans (plans.py);
``usage_update`` (usage.py); notices and compaction (notices.py); v2's ``state_update``
lifecycle (lifecycle.py); child sessions (subagents.py: their updates never reach this turn's
answer); the file changes tool calls report (file_changes.py); and the session's state
(session_state.py). User messages are counted only.

Whose update: an update is this session's only when its ``sessionId`` is the session's
(:meth:`TurnCollector.session_known`); one that names a child session followed is that
child's (subagents.py); any other — an unknown session, a child dropped past its cap or for
an id too long — is dropped and counted, never this session's answer, tool calls or plan.
Updates that come before the session's id is known (before the ``session/new`` or
``session/fork`` reply) are held, at most :data:`MAX_EARLY` of them and
:data:`MAX_EARLY_CHARS` characters, and judged the same way once it is.

Tolerance: updates may arrive before the ``session/new`` reply and after the prompt reply
(the collector keeps listening until the agent has exited); a permission request may arrive
before its ``tool_call``; unknown update kinds are counted and kept in the transcript.

``session/load`` replays the whole conversation as updates before its reply
(:meth:`TurnCollector.replay`): those are history, so they are counted and never become this
turn's answer, tool calls or plan — only the session state they carry is kept.

Hostile input: every field is type-checked where it is read; an update that does not fit is
skipped and counted in :attr:`TurnCollector.malformed` (never an exception: the collector
is fuzzed with arbitrary JSON). Everything kept is bounded: the answer text of a turn
(:data:`.messages.MAX_ANSWER_BYTES` of memory: characters times the widest character's bytes,
as the joined string will hold them), the messages of a turn (:data:`.messages.MAX_MESSAGES`,
oldest dropped, and chunks of a dropped one dropped too: they are not a new message; both
kept by :class:`.messages.TurnMessages`), the tool calls
(:data:`MAX_TOOL_CALLS`, then counted), the distinct kinds counted. Every keyed table drops
and counts what does not fit (``_records/bounded.py``); :meth:`TurnCollector.warnings` says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from acp_bridge._acp.turn.lifecycle import TurnState
from acp_bridge._acp.turn.messages import MAX_ANSWER_BYTES, MAX_MESSAGES, TurnMessages
from acp_bridge._acp.turn.notices import Notices
from acp_bridge._acp.turn.plans import Plans
from acp_bridge._acp.turn.session_state import SessionState
from acp_bridge._acp.turn.subagents import Subagents
from acp_bridge._acp.turn.tool_calls import TurnToolCalls
from acp_bridge._acp.turn.usage import prompt_usage, usage_update
from acp_bridge._acp.wire.schema import ToolCallUpdate
from acp_bridge.envelope import ToolCallRecord
from acp_bridge.events import EventSink

MAX_KINDS = 64
"""Distinct update kinds counted; kind names are cut to 64 characters."""
MAX_EARLY = 256
"""Updates held while the session's id is not yet known."""
MAX_EARLY_CHARS = 1 << 20
"""Their size (characters of strings, and a few per value), all together."""


class TurnCollector:
    """Everything the ``session/update`` stream tells us, gathered for the envelope."""

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink
        self._in_turn = False
        self.messages = TurnMessages(sink)
        self.tools = TurnToolCalls(sink)
        self.plan: list[dict[str, Any]] = []
        self.usage: dict[str, Any] = {}
        self.kinds: Counter[str] = Counter()
        self.unknown_kinds: Counter[str] = Counter()
        self.malformed = 0
        self._taken = False
        self.late_chunks = 0
        """Message chunks after the turn's answer was taken (not part of it)."""
        self.bad_usage: list[str] = []
        """Usage figures of the prompt's reply that were not numbers in range (not kept)."""
        self.state = SessionState()
        self.replaying = False
        self.replayed = 0
        self.plans = Plans()
        self.notices = Notices(sink)
        self.turn_state = TurnState(sink)
        self.subagents = Subagents(sink)
        self.session_id: str | None = None
        """The session's id, once known: only its updates are its own."""
        self._early: list[dict[str, Any]] = []
        self._early_chars = 0
        self.early_dropped = 0
        """Updates before the session's id was known, past what is held."""
        self.unlisted_kinds = 0
        """Updates of kinds past the first MAX_KINDS distinct ones (not counted by kind)."""

    # --- the stream (called by the connection for every session/update) -----------------

    def __call__(self, params: dict[str, Any]) -> None:
        update = params.get("update")
        if not isinstance(update, dict):
            self.malformed += 1
            return
        session_id = params.get("sessionId")
        if session_id != self.session_id or session_id is None:
            self._elsewhere(session_id, params, update)
            return
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            if self._in_turn:
                if not self.messages.chunk(update):
                    self.malformed += 1
            elif self.replaying:
                self.replayed += 1
            elif self._taken:
                self.late_chunks += 1
            return
        if not isinstance(kind, str):
            self.malformed += 1
            return
        kind = kind[:64]
        if kind in self.kinds or len(self.kinds) < MAX_KINDS:
            self.kinds[kind] += 1
        else:
            self.unlisted_kinds += 1
        handler = _STATE_HANDLERS.get(kind)
        if handler is None:
            if self.replaying:  # history: not this turn's tool calls, plan or usage
                self.replayed += 1
                return
            handler = _HANDLERS.get(kind)
        if handler is not None:
            try:
                handler(self, update)
            except (ValueError, TypeError):  # a malformed rare update must not end the run
                self.malformed += 1
        elif kind not in _KNOWN_IGNORED:
            if kind in self.unknown_kinds or len(self.unknown_kinds) < MAX_KINDS:
                self.unknown_kinds[kind] += 1
            else:
                self.unlisted_kinds += 1

    def _elsewhere(self, session_id: Any, params: dict[str, Any], update: dict[str, Any]) -> None:
        """An update that does not name this session: a child's, held (the session's id is
        not known yet), or nobody's here — counted, never taken as this session's."""
        if self.session_id is None:
            self._hold(params, update)
            return
        child = self.subagents.children.find(session_id)
        if child is None:
            self.subagents.foreign += 1
            return
        before = self.subagents.tokens()
        self.subagents.child_update(child, update)
        self._count_children(before)

    def _hold(self, params: dict[str, Any], update: dict[str, Any]) -> None:
        room = MAX_EARLY_CHARS - self._early_chars
        size = _size_within(update, room) if len(self._early) < MAX_EARLY else None
        if size is None:
            self.early_dropped += 1
            return
        self._early_chars += size
        self._early.append(params)

    def session_known(self, session_id: str) -> None:
        """The session's id (the ``session/new`` or ``session/fork`` reply's, or the one
        resumed or loaded): from now on an update is this session's only when it names it.
        The updates held until now are judged by it, in the order they came."""
        self.session_id = session_id
        early, self._early, self._early_chars = self._early, [], 0
        for params in early:
            self(params)

    def _tool_call(self, update: dict[str, Any]) -> None:
        if update.get("sessionUpdate") == "tool_call":
            self.messages.current = None  # an agent without message ids: a tool call ends a message
        self.tools.update(update)

    def _plan(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        plans = self.plans
        if kind == "plan":
            self.plan = plans.replace(update)
        else:
            self.plan = plans.update(update) if kind == "plan_update" else plans.remove(update)
        self._sink.emit("plan", entries=self.plan)

    def _whole_message(self, update: dict[str, Any]) -> None:
        self.messages.whole(update, in_turn=self._in_turn)

    def _subagent(self, update: dict[str, Any]) -> None:
        before = self.subagents.tokens()
        self.subagents.announce(update)
        self._count_children(before)

    def _count_children(self, before: int) -> None:
        tokens = self.subagents.tokens()
        if tokens != before:  # the budget counts the children: tell it
            self.usage["subagent_tokens"] = tokens
            self._sink.emit("usage", **self.usage)

    def _usage_update(self, update: dict[str, Any]) -> None:
        usage_update(self.usage, update)
        self._sink.emit("usage", **self.usage)

    def _thought(self, update: dict[str, Any]) -> None:
        content = update.get("content")
        if isinstance(content, dict) and isinstance(content.get("text"), str):
            self._sink.emit("thought", text=content["text"])

    # --- what the turn produced ---------------------------------------------------------

    def replay(self, on: bool) -> None:
        """Between sending ``session/load`` and its reply: updates are history."""
        self.replaying = on

    def warnings(self) -> list[str]:
        """What the collector skipped or could not keep, in plain words."""
        out = []
        if self.unknown_kinds:
            kinds = ", ".join(sorted(self.unknown_kinds))
            out.append(f"ignored unknown session/update kinds: {kinds}")
        if self.malformed:
            out.append(f"skipped {self.malformed} malformed session/update(s)")
        if self.late_chunks:
            out.append(
                f"ignored {self.late_chunks} message chunk(s) that came after the turn's "
                "answer was taken"
            )
        if self.bad_usage:
            shown = "; ".join(self.bad_usage[:4])
            out.append(f"ignored usage figures that are not token counts in range: {shown}")
        out += self.tools.warnings()
        out += self.subagents.warnings()
        out += self.notices.warnings()
        out += self.plans.warnings()
        if self.early_dropped:
            out.append(
                f"dropped {self.early_dropped} session/update(s) sent before the session's id "
                f"was known, past the {MAX_EARLY} (or {MAX_EARLY_CHARS >> 20} MiB) held"
            )
        messages = self.messages
        if dropped := messages.dropped_ids_warning():
            out.append(dropped)
        if messages.retired_chunks:
            out.append(
                f"dropped {messages.retired_chunks} chunk(s) of messages dropped from the turn "
                f"(past {MAX_MESSAGES} messages)"
            )
        if self.unlisted_kinds:
            out.append(
                f"counted {self.unlisted_kinds} update(s) of kinds past the first {MAX_KINDS} "
                "distinct ones without their kind"
            )
        if messages.dropped_chars:
            out.append(
                f"the answer was cut at {MAX_ANSWER_BYTES >> 20} MiB of text; "
                f"{messages.dropped_chars} more characters not kept"
            )
        return out

    def begin_turn(self) -> None:
        """Start collecting a new turn's answer (a repair turn forgets the previous one)."""
        self._in_turn = True
        self._taken = False
        self.turn_state.begin()
        self.messages.begin()

    def end_turn(self) -> None:
        """The turn's answer is taken (to be checked): message chunks from now until the next
        turn are counted, not added to it."""
        self._in_turn = False
        self._taken = True

    def tool_call_seen(self, tool: ToolCallUpdate) -> None:
        """A permission request named this tool call (maybe before its ``tool_call``)."""
        self.tools.seen(tool)

    def announced(self, tool_call_id: str) -> ToolCallUpdate | None:
        """What the turn announced of a tool call so far (bounded), if anything."""
        return self.tools.announced(tool_call_id)

    def answer(self) -> str:
        """The last non-blank agent message of the turn."""
        return self.messages.answer()[0]

    def answer_message_id(self) -> str | None:
        """The ``messageId`` of the answer, when the agent sends message ids."""
        message = self.messages.answer()[1]
        return message.message_id if message is not None else None

    def add_prompt_usage(self, usage: Any) -> None:
        """The usage figures of the prompt's reply (those out of range noted, not kept)."""
        prompt_usage(self.usage, self.bad_usage, usage)

    def tool_call_records(self) -> list[ToolCallRecord]:
        return self.tools.records()


def _size_within(value: Any, budget: int) -> int | None:
    """About what ``value`` (parsed JSON) holds — characters of its strings, a few per other
    value — or None as soon as that passes ``budget``: the walk stops there, whatever the
    size."""
    size = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, dict):
            size += 2
            for key, inner in item.items():
                size += len(key) + 3
                stack.append(inner)
                if size > budget:
                    return None
        elif isinstance(item, list):
            size += 2
            stack.extend(item)
            size += len(item)
        else:
            size += 8
        if size > budget:
            return None
    return size


def _ignore(collector: TurnCollector, update: dict[str, Any]) -> None:
    return None


# What each update kind does, by class: a table of the collector's own bound methods would
# be a reference cycle, and with it the whole run's state would wait for the garbage
# collector instead of going when the run does.
_Handler = Callable[[TurnCollector, dict[str, Any]], None]
_HANDLERS: dict[str, _Handler] = {
    "tool_call": TurnCollector._tool_call,
    "tool_call_update": TurnCollector._tool_call,
    "tool_call_content_chunk": lambda c, u: c.tools.content_chunk(u),
    "plan": TurnCollector._plan,
    "plan_update": TurnCollector._plan,
    "plan_removed": TurnCollector._plan,
    "usage_update": TurnCollector._usage_update,
    "agent_thought_chunk": TurnCollector._thought,
    "agent_thought": TurnCollector._thought,
    "agent_message": TurnCollector._whole_message,
    "state_update": lambda c, u: c.turn_state.apply(u),
    "notice": lambda c, u: c.notices.notice(u),
    "compaction_update": lambda c, u: c.notices.compaction(u),
    "compaction_summary_chunk": lambda c, u: c.notices.summary_chunk(u),
    "subagent_update": TurnCollector._subagent,
    "session_message": lambda c, u: c.subagents.message(u),
    "session_message_chunk": _ignore,  # content of a message counted by its upsert
    "user_message_chunk": _ignore,  # our own prompt, echoed (or replayed)
    "user_message": _ignore,
}
_STATE_HANDLERS: dict[str, _Handler] = {
    "current_mode_update": lambda c, u: c.state.mode_update(u),
    "config_option_update": lambda c, u: c.state.config_option_update(u),
    "session_info_update": lambda c, u: c.state.session_info_update(u),
    "available_commands_update": lambda c, u: c.state.commands_update(u),
}


# Kinds known and deliberately not used (agent-owned terminals are display-only).
_KNOWN_IGNORED = frozenset({"terminal_update", "terminal_output_chunk"})
