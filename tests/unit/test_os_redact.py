"""Transcript redaction must hide secrets and still leave every line valid JSON."""

from __future__ import annotations

import json
from pathlib import Path

from acp_bridge._acp.transcript import Transcript
from acp_bridge._os.redact import Redactor


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
