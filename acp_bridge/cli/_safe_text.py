"""Text the CLI shows a person, and JSON it prints: never a command to their terminal.

What the CLI prints carries text nobody on this side wrote — an agent's answer and thoughts,
tool titles, plan entries, the agent's stderr, case names of a smoke suite, run summaries.
A terminal obeys control characters in it: an OSC 52 sequence writes the clipboard, OSC 0
retitles the window, ``ESC [ 2 J`` clears the screen, a C1 byte (U+0080 to U+009F) is a
control to many terminals too, and a bidi override (U+202E) shows text in another order than
it runs. Two rules keep that out:

- **Human text** (:func:`visible`): every control character is shown the way Python's
  ``repr`` writes it — ESC as ``\\x1b``, a C1 control as ``\\x9b``, U+202E as ``\\u202e`` —
  except newline and tab. Controls are C0 (but newline and tab), DEL, C1, every Unicode
  *format* character (bidi embeddings, overrides and isolates, zero-width spaces, the byte
  order mark, invisible tag characters) except ZWJ and ZWNJ (emoji and several scripts need
  them), lone surrogates, and the line and paragraph separators. A bare carriage return
  would let a line overwrite what came before it: it is shown too (``\\r\\n`` is a newline).
  :func:`one_line` also shows newlines, for a field that must stay on its line (a tool
  title, a case name). This holds whether or not the stream is a terminal: a CI log viewer,
  ``less -R`` or a ``tail -f`` of a redirected file renders escape sequences as well.
- **JSON** (:func:`json_text`): the same characters, where they occur inside strings, are
  written as ``\\uXXXX`` escapes (JSON itself escapes only C0), so ``cat`` of any JSON the
  CLI printed is safe; the data is the same once parsed. Other text stays readable UTF-8, or
  becomes ``\\uXXXX`` escapes too when the stream cannot carry UTF-8 (an ASCII locale).
"""

from __future__ import annotations

import codecs
import json
import re
from functools import cache
from typing import Any, TextIO

# Every character of Unicode category Cc, Cf, Cs, Zl or Zp (a test checks this against
# unicodedata), except newline, tab, ZWNJ and ZWJ; plus a few Cf characters newer Unicode
# versions added (U+13439 to U+1343F), so an older Python does not let them through.
_CONTROL_RANGES = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
)


@cache
def control_pattern(*, newline: bool = False) -> re.Pattern[str]:
    """The characters shown as escapes (and newline, with ``newline``). Compiled on first
    need: each pattern costs ~5 M instructions to compile, and most text has no such
    character (:func:`_plain` says so without it)."""
    return re.compile(f"[{_CONTROL_RANGES}\n]" if newline else f"[{_CONTROL_RANGES}]")


def _plain(text: str) -> bool:
    """Whether ``text`` surely has no character shown as an escape but newline and tab:
    every one of them is of a category ``str.isprintable`` says no to (a space other than
    U+0020, a private or unassigned character is one too: the pattern then decides)."""
    # Newline and tab are shown as they are. (replace, not translate: faster than the
    # pattern's search on any text, where translate is slower on text past ASCII.)
    return text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable()


def _shown(match: re.Match[str]) -> str:
    """A control character as ``repr`` writes it."""
    point = ord(match.group())
    if point == 0x0A:
        return "\\n"
    if point == 0x0D:
        return "\\r"
    if point < 0x100:
        return f"\\x{point:02x}"
    if point < 0x10000:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def visible(text: str) -> str:
    """``text`` with every control character but newline and tab shown as an escape."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text if _plain(text) else control_pattern().sub(_shown, text)


def one_line(text: str) -> str:
    """As :func:`visible`, and newlines shown as ``\\n``: a field that stays on its line."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text if text.isprintable() else control_pattern(newline=True).sub(_shown, text)


def _json_escape(match: re.Match[str]) -> str:
    point = ord(match.group())
    if point < 0x10000:
        return f"\\u{point:04x}"
    point -= 0x10000  # a UTF-16 surrogate pair, as JSON writes a character past the BMP
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"


def json_text(data: Any, *, indent: int | None = None, ascii_only: bool = False) -> str:
    """``data`` as JSON text that carries no control character raw (see the module doc);
    ``ascii_only``: every non-ASCII character escaped (for a stream that is not UTF-8)."""
    return safe_json(json.dumps(data, indent=indent, ensure_ascii=ascii_only))


def compact_json_text(data: Any, *, ascii_only: bool = False) -> str:
    """As :func:`json_text` on one line, without spaces after ``,`` and ``:``: through
    orjson when it can (ten times the standard library's speed: ``ps --json`` of 10 000 runs
    is 5 MB), else through ``json`` — the same data either way (a float with an exponent may
    be spelled ``1e-07`` or ``1e-7``; an infinite one, which JSON cannot spell, is ``null``
    through orjson, the non-JSON ``Infinity`` through ``json``)."""
    if ascii_only:  # orjson writes UTF-8 only
        return safe_json(json.dumps(data, ensure_ascii=True, separators=(",", ":")))
    return safe_json(compact_json_raw(data))


def compact_json_raw(data: Any) -> str:
    """:func:`compact_json_text` before the controls are escaped (UTF-8 kept): for pieces
    joined first and escaped as a whole (escaping is per character)."""
    try:
        import orjson  # here, not above: only this path pays its import
    except ImportError:  # an install without it still works, slower
        pass
    else:
        try:
            return orjson.dumps(data).decode()
        except TypeError:  # what orjson refuses (an int past 64 bits, …) json writes
            pass
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def safe_json(text: str) -> str:
    """JSON text (or a piece of it, cut anywhere between characters) with the controls JSON
    leaves raw escaped: the rule is per character, so pieces join to the whole's."""
    if text.isascii():  # C0 is escaped by JSON itself: only DEL is left to look for
        return text.replace("\x7f", "\\u007f") if "\x7f" in text else text
    if _plain(text):  # one C pass: the pattern's scan of 13 MB (19 000 runs) took 1 s
        return text
    # Outside strings JSON text has only ASCII punctuation, digits, letters and the
    # indent's newlines and spaces: what matches here is inside a string.
    return control_pattern().sub(_json_escape, text)


def is_utf(stream: TextIO | None) -> bool:
    """Whether ``stream`` encodes every character (a UTF codec): else JSON is ASCII."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        return codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return False
