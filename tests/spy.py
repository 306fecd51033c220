"""The spy agent (tests/agents/spy_agent.py) under the test harness: write its script, get
a config whose profile ``spy`` runs it, read back what it received."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_bridge.config import LoadedConfig
from tests.conftest import AGENTS, AgentHarness


@dataclass
class Spy:
    harness: AgentHarness
    script: dict[str, Any] = field(default_factory=dict)

    @property
    def record(self) -> Path:
        # In a folder the agent may write in its sandbox: declared as its state below.
        return self.harness.root / "spy" / "received.jsonl"

    def config(
        self,
        script: dict[str, Any] | None = None,
        *,
        settings: dict[str, Any] | None = None,
        **profile: Any,
    ) -> LoadedConfig:
        self.script = {**(script or {}), "record": str(self.record)}
        self.record.parent.mkdir(exist_ok=True)
        sandbox = profile.pop("sandbox", {})
        profile["sandbox"] = {
            **sandbox,
            "state": [*sandbox.get("state", []), str(self.record.parent)],
        }
        path = self.harness.root / "spy-script.json"
        path.write_text(json.dumps(self.script))
        command = {"command": sys.executable, "args": [str(AGENTS / "spy_agent.py"), str(path)]}
        return self.harness.config({"spy": {**command, **profile}}, **(settings or {}))

    def received(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def methods(self) -> list[str]:
        """The methods the client called (requests and notifications), in order."""
        return [m["method"] for m in self.received() if "method" in m]

    def request(self, method: str) -> dict[str, Any]:
        """The one request (or notification) of ``method`` the client sent."""
        (found,) = [m for m in self.received() if m.get("method") == method]
        return found

    def reply_to(self, request_id: str) -> dict[str, Any]:
        """The client's reply to the spy's own request ``request_id`` (``spy-N``)."""
        (found,) = [m for m in self.received() if "method" not in m and m.get("id") == request_id]
        return found
