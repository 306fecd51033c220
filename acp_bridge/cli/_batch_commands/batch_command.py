"""``acp-bridge batch`` and ``acp-bridge worker``: batches from the command line.

``batch`` reads the tasks (a bad line is a usage error naming the file and line, before
anything runs), holds the ``--out`` file (a second batch on it is refused, exit 2), skips
the tasks it has already, runs the rest on the executor, and writes envelopes as tasks end
(see :mod:`acp_bridge._batch.results_file`); without ``--out`` the envelopes go to stdout
in input order, each as soon as those before it are out. Ctrl-C or SIGTERM: running tasks
are cancelled where they run and their envelopes kept; a second one stops waiting for them.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from acp_bridge._os.race import race
from acp_bridge.cli._agent_commands.profiles_command import load
from acp_bridge.cli._printing import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    HumanStream,
    err,
    flush_stdout,
    human_stream,
    out,
    out_json,
)
from acp_bridge.cli._signals import interrupts
from acp_bridge.errors import ConfigError

if TYPE_CHECKING:
    from acp_bridge._batch.executor import Executor
    from acp_bridge._batch.results_file import ResultsFile
    from acp_bridge._batch.tasks import Keyed
    from acp_bridge.envelope import SubtaskResult


def executor_from(args: argparse.Namespace) -> Executor:
    """The executor the command line asks for, with the settings its flags give."""
    from acp_bridge._batch.executor import executor_named

    settings: dict[str, Any] = {
        name: value
        for name in ("address", "grace", "runtime_env")
        if (value := getattr(args, name, None)) is not None
    }
    if "runtime_env" in settings:
        from acp_bridge._os import bounded_json

        try:
            settings["runtime_env"] = bounded_json.loads(settings["runtime_env"])
        except bounded_json.JsonRefused as exc:
            raise ConfigError(f"--runtime-env: {exc}") from None
    return executor_named(args.executor, **settings)


def _check_task_id(task_id: str | None, seen: dict[str, int], where: str, number: int) -> None:
    """An explicit ``task_id`` names one run: a second line with it would run twice and be
    found once by ``show``."""
    if task_id is None:
        return
    if task_id in seen:
        raise ConfigError(f"{where}: task_id {task_id!r} is also line {seen[task_id]}'s")
    seen[task_id] = number


def read_tasks(path: Path) -> list[Keyed]:
    """The tasks of a JSONL file ('-': stdin), read line by line within the tasks file's
    bounds (``_os/fs/input_files.py``); errors name the file and line."""
    from acp_bridge._batch.tasks import (
        MAX_TASKS_FILE_BYTES,
        MAX_TASKS_LINE_BYTES,
        TASKS_FILE,
        Keyed,
        task_from_json,
    )
    from acp_bridge._os import bounded_json
    from acp_bridge._os.fs.input_files import STDIN, decode, input_lines

    name = "stdin" if str(path) == STDIN else str(path)
    tasks: list[Keyed] = []
    lines: dict[str, int] = {}
    task_ids: dict[str, int] = {}
    read = input_lines(
        path,
        what=TASKS_FILE,
        limit=MAX_TASKS_FILE_BYTES,
        line_limit=MAX_TASKS_LINE_BYTES,
        json_objects=True,
    )
    try:
        for number, line in read:
            if not line.strip():
                continue
            try:
                task = task_from_json(bounded_json.loads(decode(line, name, line=number)))
            except bounded_json.JsonRefused as exc:  # not JSON, nested too deep
                column = f":{exc.column}" if exc.column and exc.line == 1 else ""
                raise ConfigError(f"{name}:{number}{column}: {exc}") from None
            except ConfigError as exc:
                raise ConfigError(f"{name}:{number}: {exc}") from None
            index = len(tasks)
            key = task.key if task.key is not None else str(index)
            if key in lines:
                raise ConfigError(f"{name}:{number}: key {key!r} is also line {lines[key]}'s")
            lines[key] = number
            _check_task_id(task.request.task_id, task_ids, f"{name}:{number}", number)
            tasks.append(Keyed(index, key, task))
    except OSError as exc:  # missing, unreadable, not a regular file, too big, not UTF-8
        raise ConfigError(_said(exc, name)) from None
    finally:
        read.close()
    if not tasks:
        raise ConfigError(f"{name}: no task")
    return tasks


def _said(exc: OSError, name: str) -> str:
    """Why the tasks cannot be read, in one line that starts with the file (and line)."""
    from acp_bridge._os.fs.input_files import InputRefused

    if isinstance(exc, InputRefused):
        return str(exc)
    return f"{name}: cannot read the tasks: {exc.strerror or exc}"


class BatchProgress:
    """One line on stderr per task that ends, with the batch's counts; a summary at the end."""

    def __init__(self, stream: HumanStream, total: int) -> None:
        self.stream = stream
        self.total = total
        self.running: dict[str, str] = {}
        self.ended: Counter[str] = Counter()
        self.per_node: Counter[str] = Counter()
        self.codes: Counter[str] = Counter()

    def __call__(self, what: str, task: Keyed, node: str | None, envelope: Any) -> None:
        if what == "started":
            self.running[task.key] = node or "?"
            return
        self.running.pop(task.key, None)
        if what == "retrying":
            code = envelope.meta.error_code
            self._line(f"~ {task.key} {code} on {_short(node)}: running it again")
            return
        self.ended[envelope.status] += 1
        self.per_node[_short(envelope.meta.node)] += 1
        if envelope.status != "done":
            self.codes[str(envelope.meta.error_code)] += 1
        seconds = (envelope.meta.duration_ms or 0) / 1000
        status = envelope.status if envelope.ok else f"failed ({envelope.meta.error_code})"
        self._line(f"{task.key} {status} on {_short(envelope.meta.node)} ({seconds:.1f}s)")

    def _line(self, text: str) -> None:
        done, failed = self.ended["done"], self.ended["failed"]
        queued = self.total - done - failed - len(self.running)
        nodes = Counter(_short(node) for node in self.running.values())
        where = ", ".join(f"{node} {n}" for node, n in sorted(nodes.items()))
        running = f"running {len(self.running)}" + (f" ({where})" if where else "")
        counts = f"done {done} · failed {failed} · {running} · queued {queued}"
        self.stream.write(f"[{done + failed}/{self.total}] {text}  | {counts}\n")
        self.stream.flush()

    def summary(self, skipped: int) -> list[str]:
        done, failed = self.ended["done"], self.ended["failed"]
        lines = [f"{done + failed} tasks ran: {done} done, {failed} failed"]
        if skipped:
            lines[0] += f"; {skipped} already in the results file"
        if self.codes:
            lines.append("failures: " + ", ".join(f"{c} {n}" for c, n in self.codes.most_common()))
        if self.per_node:
            nodes = ", ".join(f"{node} {n}" for node, n in sorted(self.per_node.items()))
            lines.append(f"per node: {nodes}")
        return lines


def _short(node: str | None) -> str:
    return node[:8] if node else "-"


class _InOrder:
    """Envelopes to stdout in input order, each as soon as those before it are out."""

    def __init__(self, tasks: list[Keyed]) -> None:
        self.position = {task.key: i for i, task in enumerate(tasks)}
        self.waiting: dict[int, SubtaskResult] = {}
        self.next = 0

    def __call__(self, result: SubtaskResult) -> None:
        self.waiting[self.position[(result.meta.batch or {})["key"]]] = result
        while self.next in self.waiting:
            out_json(self.waiting.pop(self.next).to_dict(), line=True)
            self.next += 1
        flush_stdout()  # a reader downstream sees each envelope as soon as it can


def cmd_batch(args: argparse.Namespace) -> int:
    from acp_bridge._batch.results_file import ResultsFile

    tasks = read_tasks(args.tasks)
    results = ResultsFile(args.out) if args.out else None
    if results is None:
        return _run_batch(args, tasks, None)
    results.lock()  # before reading it: what is done is what no other batch is doing
    try:
        return _run_batch(args, tasks, results)
    finally:
        results.unlock()


def _run_batch(args: argparse.Namespace, tasks: list[Keyed], results: ResultsFile | None) -> int:
    from acp_bridge._batch.batch_run import new_batch_id, run_batch
    from acp_bridge._runs import foreground

    done_keys: set[str] = set()
    if results is not None:
        results.load()
        done_keys = results.done_keys()
    todo = [task for task in tasks if task.key not in done_keys]
    executor = executor_from(args)
    loaded = load(args)
    foreground.install()
    progress = BatchProgress(human_stream("stderr"), len(todo))
    batch_id = new_batch_id()  # each run of the command is a batch of its own (its tasks)
    write = results.append if results is not None else _InOrder(todo)
    statuses: dict[str, Any] = {}

    def on_result(envelope: SubtaskResult) -> None:
        write(envelope)
        statuses[(envelope.meta.batch or {})["key"]] = envelope.status

    async def main() -> None:
        async def tasks_run(cancel: anyio.Event, abort: anyio.Event) -> None:
            # The first signal cancels running tasks and starts no other; the second stops
            # waiting for them (cancelled outright; what ended is in the results). Each
            # envelope is written as its task ends and not kept (keep=False).
            await race(
                lambda: run_batch(
                    todo, executor=executor, config=loaded, concurrency=args.concurrency,
                    retries=args.retries, on_result=on_result, progress=progress, cancel=cancel,
                    keep=False, batch_id=batch_id,
                ),
                abort.wait,
            )  # fmt: skip

        await interrupts.run(tasks_run, err)

    try:
        if todo:
            anyio.run(main)
    finally:
        if results is not None:
            results.write([task.key for task in tasks])
    if todo:  # where to look at it: acp-bridge ui's page of it
        err(f"batch {batch_id}: acp-bridge ui shows it at /batches/{batch_id}")
    for line in progress.summary(len(tasks) - len(todo)):
        err(line)
    if interrupts.count:
        return EXIT_INTERRUPTED
    if results is not None:
        statuses = dict(results.statuses())
    every_done = all(statuses.get(task.key) == "done" for task in tasks)
    return EXIT_OK if every_done else EXIT_FAILED


def cmd_worker(args: argparse.Namespace) -> int:
    from acp_bridge._batch.ray.worker import plan_worker, start_worker

    loaded = load(args)
    ray_args = [a for a in args.ray_args if a != "--"]
    profiles = [name for name in (args.agents or "").split(",") if name]
    plan = anyio.run(
        lambda: plan_worker(
            loaded, args.address, profiles=profiles, slots=args.slots, ray_args=ray_args
        )
    )
    for report in plan.reports:
        mark = "ready" if report.ready else "NOT READY (not offered)"
        err(f"{report.profile}: {mark}")
        for check in report.checks:
            if not check.ok:
                err(f"  !! {check.name}: {check.detail}")
    err(f"offering: {json.dumps(plan.resources)}")
    if args.dry_run:
        out(shlex.join(plan.argv))
        return EXIT_OK
    flush_stdout()
    sys.stderr.flush()
    start_worker(plan)
    return EXIT_OK  # not reached: the process became the node
