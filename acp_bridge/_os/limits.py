"""The largest numbers the bridge accepts anywhere: each is time or memory it commits to.

Config fields, command-line options and MCP arguments all check against these, so a value
that would exhaust memory or never end (``output_byte_limit: 1e13``, ``--timeout 1e300``) is
refused where it is typed. Kept free of imports, so the command line can check a number
before it loads pydantic (``wait``, ``ps`` and ``logs`` never do).
"""

from __future__ import annotations

MAX_SECONDS = 7 * 24 * 3600.0
"""The longest any timeout may be (a week): past it a run is lost, not slow."""
MAX_BYTES = 1 << 30
"""The most any size limit may be (1 GiB): each is memory the bridge may hold at once."""
MAX_COUNT = 1024
"""The most any count of things held at once may be (terminals, say)."""
MAX_REPAIR_TURNS = 10
"""The most repair turns: each is a whole model turn."""
MAX_CONCURRENT = 1024
"""The most any ``max_concurrent`` may be: each running run is at least one process."""
MAX_TOKENS = 10**15
"""The largest token budget (``max_tokens``): more than any run uses, and within the run
store's 64-bit integers."""
MAX_COST = 1e12
"""The largest cost budget (``max_cost``)."""
MAX_IDLE = 3600.0
"""The longest an agent may be kept alive between turns (``timeouts.idle``: an hour). Each
held agent is a live process and a lane slot; a session idle for longer is resumed instead."""
MAX_TASK_BYTES = 16 << 20
"""The longest task or follow-up text, UTF-8 (16 MiB): a prompt, stored with its run and
sent to the agent in one message. Text read from stdin stops there."""
