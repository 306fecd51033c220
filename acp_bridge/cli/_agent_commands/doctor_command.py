"""``acp-bridge doctor [PROFILE…] [--json]``: print whether each profile is ready here."""

from __future__ import annotations

import argparse

import anyio

from acp_bridge._agents.doctor import diagnose
from acp_bridge.cli._agent_commands.profiles_command import load
from acp_bridge.cli._printing import EXIT_FAILED, EXIT_OK, out, out_json
from acp_bridge.cli._safe_text import one_line


def cmd_doctor(args: argparse.Namespace) -> int:
    loaded = load(args)
    reports = anyio.run(diagnose, loaded, args.profiles)
    if args.json:
        out_json([r.to_dict() for r in reports], pretty=True)
    else:
        for report in reports:
            out(f"{one_line(report.profile)}: {'ready' if report.ready else 'NOT READY'}")
            for check in report.checks:
                mark = "?? " if check.warning else "ok " if check.ok else "!! "
                out(f"  {mark}{check.name:<8} {one_line(check.detail)}")
                if check.fix:
                    out(f"     fix: {one_line(check.fix)}")
    return EXIT_OK if all(r.ready for r in reports) else EXIT_FAILED
