"""Transcript redaction must hide secrets and still leave every line valid JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_bridge._acp.wire.transcript import Transcript
from acp_bridge._os.redact import Redactor, is_secret_value


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_env_values_that_are_json_tokens_do_not_corrupt_the_transcript(tmp_path: Path) -> None:
    # Built-in profiles set flags like GEMINI_CLI_NO_RELAUNCH: "true"; every env value is
    # treated as a secret, and a raw replace of `true` / `1234` breaks the JSON around it.
    path = tmp_path / "t.jsonl"
    transcript = Transcript(path, Redactor(["true", "false", "null", "1234", "0.25"]))
    message = {"id": 1234, "result": {"ok": True, "no": False, "none": None, "ratio": 0.25}}
    transcript.incoming(json.dumps(message, separators=(",", ":")).encode())
    transcript.close()
    (line,) = lines_of(path)
    assert line["msg"] == message


def test_a_secret_is_redacted_in_its_json_escaped_forms(tmp_path: Path) -> None:
    secret = 'pa"ss\\wörd-42'
    path = tmp_path / "t.jsonl"
    transcript = Transcript(path, Redactor([secret]))
    for ensure_ascii in (False, True):
        text = json.dumps({"token": secret, "note": f"key={secret};"}, ensure_ascii=ensure_ascii)
        transcript.outgoing(text.encode())
    transcript.close()
    for line in lines_of(path):
        assert line["msg"] == {"token": "[REDACTED]", "note": "key=[REDACTED];"}


def test_ordinary_secrets_are_still_redacted(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    transcript = Transcript(path, Redactor(["sk-live-abcdef", "abc"]))  # "abc": too short to be one
    transcript.incoming(b'{"params":{"env":"sk-live-abcdef","x":"abc"}}')
    transcript.note("started with sk-live-abcdef")
    transcript.close()
    first, second = lines_of(path)
    assert first["msg"] == {"params": {"env": "[REDACTED]", "x": "abc"}}
    assert second["note"] == "started with [REDACTED]"


def test_data_is_redacted_in_its_strings_keys_too() -> None:
    redactor = Redactor(["sk-live-abcdef"])
    data = {"a": ["x sk-live-abcdef", 3, None], "sk-live-abcdef": {"n": True}}
    assert redactor.data(data) == {"a": ["x [REDACTED]", 3, None], "[REDACTED]": {"n": True}}


SECRET_CHARS = st.sampled_from(list('abcXYZ019-_/+="\\é€😀\t~'))


def _spell(char: str, how: int) -> str:
    """One of the ways JSON text may write ``char`` inside a string."""
    code = ord(char)
    if code > 0xFFFF:
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        forms = [f"\\u{high:04x}\\u{low:04X}", f"\\u{high:04X}\\u{low:04x}"]
    else:
        forms = [f"\\u{code:04x}", f"\\u{code:04X}"]
    short = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\t": "\\t"}
    if char in short:
        forms.append(short[char])
    if char not in '"\\\t':
        forms.append(char)
    return forms[how % len(forms)]


@settings(max_examples=400)
@given(
    st.text(SECRET_CHARS, min_size=4, max_size=24).filter(is_secret_value),
    st.lists(st.integers(0, 3), min_size=24, max_size=24),
    st.text(st.sampled_from(list('ab\\"/ é')), max_size=6),
    st.text(st.sampled_from(list('ab\\"/ é')), max_size=6),
)
def test_a_secret_is_redacted_however_json_escapes_it(
    secret: str, hows: list[int], before: str, after: str
) -> None:
    spelled = "".join(_spell(c, h) for c, h in zip(secret, hows, strict=False))
    prefix, suffix = json.dumps(before)[1:-1], json.dumps(after)[1:-1]
    line = ('{"k":"' + prefix + spelled + suffix + '","n":1}').encode()
    assert json.loads(line)["k"] == before + secret + after  # the spelling is right
    redacted = json.loads(Redactor([secret]).json_bytes(line))  # still valid JSON
    assert secret not in redacted["k"] and "[REDACTED]" in redacted["k"]
    assert redacted["n"] == 1


@pytest.mark.parametrize(
    ("secret", "text"),
    [
        ("000é", '{"k":"\\u003000\\u00e9"}'),  # the secret's ASCII form from an escape's digit
        ("1abc", '{"k":"\\u0061abc1abc"}'),  # a spelling from an escape's digit, then the secret
        ("nabc", '{"k":"\\nabc nabc"}'),  # from the letter of a short escape
    ],
)
def test_a_secret_read_from_inside_an_escape_is_not_cut_there(secret: str, text: str) -> None:
    """Found by the property test above: a spelling that starts inside an escape was
    replaced from there, cutting the escape (invalid JSON)."""
    line = text.encode()
    assert secret in json.loads(line)["k"]
    redacted = json.loads(Redactor([secret]).json_bytes(line))["k"]
    assert secret not in redacted and "[REDACTED]" in redacted
    assert redacted.replace("[REDACTED]", secret) == json.loads(line)["k"]


def test_an_escaped_backslash_before_u_is_not_an_escape() -> None:
    line = b'{"k":"\\\\u0061bcd"}'  # the text \u0061bcd, not "abcd"
    assert Redactor(["abcd"]).json_bytes(line) == line
