"""The human progress lines: message chunks coalesced between flushes, nothing lost."""

from __future__ import annotations

import io

from acp_bridge.cli._printing import HumanStream
from acp_bridge.cli._run_commands.live_events import HumanProgress
from acp_bridge.events import Event


class CountingStream(io.StringIO):
    """A text stream that counts its writes (stderr is unbuffered: each is a system call)."""

    writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def chunk(text: str) -> Event:
    return Event("message", "sub_1", 0.1, {"text": text})


def test_coalesced_chunks_are_flushed_by_the_ticker_a_newline_a_line_or_close() -> None:
    stream = CountingStream()
    human = HumanProgress(HumanStream(stream), coalesce=True)
    for n in range(100):
        human(chunk(f"t{n} "))
    human.flush_pending()
    assert stream.writes == 1 and stream.getvalue().startswith("t0 t1 ")
    human.flush_pending()  # nothing new: no write
    assert stream.writes == 1
    human(chunk("end of line\n"))
    assert stream.writes == 2
    human(chunk("more"))
    human(Event("status", "sub_1", 0.2, {"phase": "prompting"}))  # a line writes it too
    human(chunk("last"))
    assert stream.getvalue().endswith("more\n· prompting\n")
    human.close()
    text = "".join(f"t{n} " for n in range(100))
    assert stream.getvalue() == f"{text}end of line\nmore\n· prompting\nlast\n"


def test_without_coalescing_every_chunk_is_written() -> None:
    stream = CountingStream()
    human = HumanProgress(HumanStream(stream))
    for n in range(10):
        human(chunk(f"t{n} "))
    assert stream.getvalue() == "".join(f"t{n} " for n in range(10))
    assert stream.writes == 10
