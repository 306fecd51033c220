"""The agent messages of a turn as the turn collector gathers them, in memory that grows with
their text, and the turn's answer: its last non-blank message.

A message's chunks are joined into blocks as they come (:class:`Message`): an object per
token-sized chunk cost ~60 bytes each (25 MB for 400 000 chunks). :class:`TurnMessages`
appends to :attr:`Message.parts` itself (the hot path: one list append per chunk). The
bounds are those of turn_collector.py: the text's memory (:data:`MAX_ANSWER_BYTES`) and the
messages kept (:data:`MAX_MESSAGES`, oldest dropped, and chunks of a dropped one dropped too).
"""

from __future__ import annotations

import sys
from typing import Any

from acp_bridge._acp.turn.tool_calls import MAX_ID_CHARS
from acp_bridge._records.bounded import BoundedTable
from acp_bridge.events import EventSink

CHUNKS_PER_BLOCK = 1024
MAX_ANSWER_BYTES = 16 << 20
"""Memory the agent's message text of one turn may take (characters times the widest
character's size, 1, 2 or 4 bytes: what the joined answer costs). Past it the text is cut and
the rest counted, not kept: the answer is held once, then written to stdout, the store and
the transcript in pieces, and a run stays within twice an idle run's memory."""
MAX_MESSAGES = 4096
"""Messages of one turn kept (by first appearance); older ones are dropped past it."""
MAX_RETIRED = 1 << 16
"""Ids of messages dropped past :data:`MAX_MESSAGES` remembered (as hashes), so that a late
chunk of one is dropped too instead of starting a new message — a new last message, the
answer."""


class Message:
    """One agent message's text: recent chunks, and older ones joined into blocks.

    Joining every 1024 chunks keeps the total work linear (each chunk is copied once into
    its block, once into the answer) and the memory at the text plus ~0.1 %."""

    __slots__ = ("blocks", "message_id", "parts")

    def __init__(self, message_id: str | None = None) -> None:
        self.blocks: list[str] = []
        self.parts: list[str] = []
        self.message_id = message_id

    def compact(self) -> None:
        self.blocks.append("".join(self.parts))
        self.parts.clear()

    def text(self) -> str:
        """The whole text, kept as the one block from then on: a second call (the partial
        output, then the answer, then its message id) returns the same string, no copy."""
        if self.parts or len(self.blocks) > 1:
            joined = "".join([*self.blocks, *self.parts])
            self.blocks = [joined]
            self.parts.clear()
        return self.blocks[0] if self.blocks else ""


def char_bytes(text: str) -> int:
    """Bytes per character of ``text`` in memory (1, 2 or 4), in O(1): from its size."""
    return 1 if text.isascii() else max(1, (sys.getsizeof(text) - _EMPTY_WIDE) // (len(text) + 1))


_EMPTY_WIDE = sys.getsizeof("\u0100") - 2 * 2  # a UCS-2 string's header


def texts(blocks: list[Any]) -> list[str]:
    return [
        block["text"]
        for block in blocks
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]


class TurnMessages:
    """The agent messages of one turn, bounded, and its answer."""

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink
        self._wants_message = sink.wants("message")
        self._messages: list[Message] = []
        self._by_id: dict[str, Message] = {}
        self.current: Message | None = None
        """The message a chunk without an id belongs to (None: a new one)."""
        self.dropped_chars = 0
        self._chars = 0
        self._width = 1
        self._retired: BoundedTable[int, bool] = BoundedTable(
            "ids of messages dropped from the turn", MAX_RETIRED
        )
        self.retired_chunks = 0
        """Chunks of messages dropped past MAX_MESSAGES (not kept, not a new message)."""

    def begin(self) -> None:
        """Forget the previous turn's messages."""
        self._chars = 0
        self._width = 1
        self._messages = []
        self._by_id = {}
        self._retired.clear()
        self.current = None

    def chunk(self, update: dict[str, Any]) -> bool:
        """An ``agent_message_chunk`` of the turn added to its message; False when its
        ``messageId`` is none ACP knows (a list, an object, a number: malformed)."""
        content = update.get("content")
        if not isinstance(content, dict) or content.get("type") != "text":
            return True
        text = content.get("text")
        if not isinstance(text, str) or not text:
            return True
        if not text.isascii() or self._width > 1:  # isascii() is O(1): a flag of the str
            width = max(self._width, char_bytes(text))
            if (self._chars + len(text)) * width > MAX_ANSWER_BYTES:
                text = self._cut(text, width)
                if not text:
                    return True
            self._width = width
        elif self._chars + len(text) > MAX_ANSWER_BYTES:
            text = self._cut(text, 1)
            if not text:
                return True
        self._chars += len(text)
        message_id = update.get("messageId")
        if message_id is None:
            message = self.current
            if message is None:
                message = self.current = self._new_message(None)
        elif type(message_id) is str and len(message_id) <= MAX_ID_CHARS:
            message = self._by_id.get(message_id)
            if message is None:
                if self._retired and hash(message_id) in self._retired:
                    self.retired_chunks += 1  # its message was dropped: so is the chunk
                    self._chars -= len(text)
                    return True
                message = self._by_id[message_id] = self._new_message(message_id)
            self.current = message
        else:
            return False
        parts = message.parts  # inlined append: this runs for every chunk
        parts.append(text)
        if len(parts) >= CHUNKS_PER_BLOCK:
            message.compact()
        if self._wants_message:
            self._sink.emit("message", text=text)
        return True

    def _cut(self, text: str, width: int) -> str:
        """What is left of ``text`` under the cap (its head; the rest counted as dropped)."""
        room = max(0, MAX_ANSWER_BYTES // width - self._chars)
        self.dropped_chars += len(text) - min(room, len(text))
        return text[:room]

    def _new_message(self, message_id: str | None) -> Message:
        message = Message(message_id)
        self._messages.append(message)
        if len(self._messages) > MAX_MESSAGES:  # keep the newest: the answer is the last
            for old in self._messages[: MAX_MESSAGES // 2]:
                if old.message_id is not None:
                    self._by_id.pop(old.message_id, None)
                    self._retired.put(hash(old.message_id), True)
            del self._messages[: MAX_MESSAGES // 2]
        return message

    def whole(self, update: dict[str, Any], *, in_turn: bool) -> None:
        """v2 ``agent_message``: an upsert of a whole message by id (content missing:
        unchanged; null: cleared; a list: the message's new content). Outside a turn only
        checked."""
        message_id = update.get("messageId")
        if type(message_id) is not str or len(message_id) > MAX_ID_CHARS:
            raise TypeError("agent_message needs a messageId")
        if not in_turn or "content" not in update:
            return
        content = update["content"]
        if content is not None and not isinstance(content, list):
            raise TypeError("agent_message.content must be a list or null")
        message = self._by_id.get(message_id)
        if message is None:
            if self._retired and hash(message_id) in self._retired:
                self.retired_chunks += 1
                return
            message = self._by_id[message_id] = self._new_message(message_id)
        self.current = message
        text = "".join(texts(content or []))
        self._chars += len(text) - len(message.text())
        message.blocks, message.parts = [], [text] if text else []
        if text and self._wants_message:
            self._sink.emit("message", text=text, message_id=message_id, whole=True)

    def answer(self) -> tuple[str, Message | None]:
        """The last non-blank message's text, and that message (None: there is none)."""
        for message in reversed(self._messages):
            text = message.text()
            if text and not text.isspace():  # not strip(): no copy of a long answer
                return text, message
        return "", None

    def dropped_ids_warning(self) -> str | None:
        """What the table of dropped messages' ids could not keep, if anything."""
        return self._retired.warning()
