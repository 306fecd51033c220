"""The viewer's pages: the runs, a run, a batch, a comparison, their fragments and live
streams, and the one action.

Server-rendered (Jinja2, autoescape on: whatever an agent wrote is shown as text) and read
from the run store the way ``ps``, ``show`` and ``logs`` read it: a page of runs by keyset
(:mod:`~acp_bridge._runs.store.run_pages`), a run through
:func:`~acp_bridge._runs.watch.get_checked` (lost-ness settled), its events a page at a time.
A batch's page and a comparison's read the runs recorded with their ``batch_id``
(:func:`~acp_bridge._runs.store.run_pages.batch_counts`, ``batch_runs``) and the comparison's
recorded decision. Live pages get server-sent events that only say *something changed* (the
list, a batch) or *events up to N* (a run); the page's script then fetches the rendered
fragment (a batch's page reloads itself). Stopping a run is
:func:`~acp_bridge._runs.caller.handle.stop_run`, the CLI's ``stop``.

The store is read on the event loop's own thread: each read is a local SQLite call of well
under a millisecond, cheaper than a thread hop (as in the store's own methods).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio
from pydantic import ValidationError
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from acp_bridge._compare.compare_result import CompareResult
from acp_bridge._runs import liveness
from acp_bridge._runs.store.run_pages import (
    ACTIVE_FILTER,
    MAX_PAGE,
    RunFilter,
    agents,
    batch_counts,
    batch_mark,
    batch_runs,
    change_mark,
    comparison,
    run_page,
)
from acp_bridge._runs.store.run_records import ACTIVE, FINAL, RunRecord
from acp_bridge._runs.store.run_store import Store, open_store
from acp_bridge._runs.watch import UnknownRunError, get_checked
from acp_bridge._ui.access import form_token, form_token_ok
from acp_bridge._ui.live_changes import POLL, changes_since, digest
from acp_bridge._ui.templating import environment
from acp_bridge._ui.timeline import diff_lines, timeline
from acp_bridge.errors import BridgeError

HERE = Path(__file__).parent
PAGE_RUNS = 50
"""Runs on one page of the list."""
PAGE_EVENTS = 500
"""Events on one page of a run's timeline (a run of a million updates stays a click away)."""
REAP_EVERY = 5.0
"""Seconds between looks for lost runs (a dead supervisor's) while the list is open."""
MAX_DIFF_BYTES = 2 << 20
"""Bytes of a run's diff file read for its page."""
MAX_FORM_BYTES = 4096
STATUSES = (ACTIVE_FILTER, *ACTIVE, *FINAL)


@dataclass(frozen=True)
class Settings:
    """What one start of the viewer serves: the store, and the token of this start."""

    store: Path | None
    token: str


class PageError(BridgeError):
    """A request the viewer cannot answer: its status and why (shown on an error page)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Pages:
    """The routes of one start of the viewer."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.templates = Jinja2Templates(env=environment(HERE / "templates"))
        self.form = form_token(settings.token)

    @property
    def store(self) -> Store:
        return open_store(self.settings.store)

    def routes(self) -> list[Route | Mount]:
        return [
            Route("/", self.runs_page),
            Route("/runs/rows", self.runs_rows),
            Route("/live/runs", self.runs_live),
            Route("/runs/{run_id}", self.run_page),
            Route("/runs/{run_id}/timeline", self.run_timeline),
            Route("/runs/{run_id}/live", self.run_live),
            Route("/runs/{run_id}/transcript", self.run_transcript),
            Route("/runs/{run_id}/envelope.json", self.run_envelope),
            Route("/runs/{run_id}/stop", self.run_stop, methods=["POST"]),
            Route("/batches/{batch_id}", self.batch_page),
            Route("/comparisons/{batch_id}", self.comparison_page),
            Route("/live/batches/{batch_id}", self.batch_live),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]

    def _render(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    # --- the runs ---------------------------------------------------------------------

    def _listing(self, request: Request) -> dict[str, Any]:
        params = request.query_params
        status = params.get("status", "")
        if status and status not in STATUSES:
            raise PageError(400, f"status: {status!r} is none of {', '.join(STATUSES)}")
        given = RunFilter(status, params.get("agent", ""), params.get("group", ""),
                          params.get("q", ""))  # fmt: skip
        before = _integer(params.get("before"), "before")
        mark = digest(change_mark(self.store.db))  # before the reads it stands for
        rows = run_page(self.store.db, given, before=before, limit=PAGE_RUNS)
        filters = {k: v for k, v in zip(("status", "agent", "group", "q"), given, strict=True) if v}
        older = None
        if len(rows) == PAGE_RUNS:
            older = "/?" + urlencode({**filters, "before": rows[-1].run.seq})
        return {"rows": rows, "given": given, "filters": filters, "older": older,
                "first_page": before is None, "query": urlencode(filters),
                "mark": mark}  # fmt: skip

    async def runs_page(self, request: Request) -> Response:
        liveness.reap(self.store)
        listing = self._listing(request)
        return self._render(
            request, "runs.html", statuses=STATUSES, agents=agents(self.store.db), **listing
        )

    async def runs_rows(self, request: Request) -> Response:
        return self._render(request, "rows.html", **self._listing(request))

    async def runs_live(self, request: Request) -> Response:
        """``changed`` whenever the list of runs did (see :func:`change_mark`) since the
        page's ``mark``; runs whose process died are settled as ``lost`` meanwhile."""
        reaped = time.monotonic()

        def now() -> str:
            nonlocal reaped
            if time.monotonic() - reaped > REAP_EVERY:
                liveness.reap(self.store)
                reaped = time.monotonic()
            return digest(change_mark(self.store.db))

        return changes_since(now, request.query_params.get("mark", ""), "runs")

    # --- a run ------------------------------------------------------------------------

    def _run(self, run_id: str) -> RunRecord:
        try:
            return get_checked(self.store, run_id)
        except UnknownRunError:
            raise PageError(404, f"no run {run_id[:80]!r} in {self.store.path}") from None

    def _items(self, run_id: str, after: int) -> dict[str, Any]:
        events = self.store.events(run_id, after, PAGE_EVENTS)
        last = events[-1][0] if events else after
        more = len(events) == PAGE_EVENTS
        return {"items": timeline(events), "last": last, "more": more}

    async def run_page(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        run = self._run(run_id)  # lost-ness settled first (a lost run gets its envelope)
        run = self.store.get(run_id) or run  # with its request and envelope
        after = _integer(request.query_params.get("after"), "after") or 0
        envelope = run.envelope or {}
        meta = envelope.get("meta") or {}
        diff, cut = _diff(meta.get("diff"))
        return self._render(
            request,
            "run.html",
            run=run,
            meta=meta,
            envelope_text=json.dumps(envelope, ensure_ascii=False, indent=2) if envelope else "",
            diff=diff,
            diff_cut=cut,
            after=after,
            live=not run.finished,
            stoppable=run.status in ACTIVE and run.detached,
            form=self.form,
            **self._items(run_id, after),
        )

    async def run_timeline(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        self._run(run_id)
        after = _integer(request.query_params.get("after"), "after") or 0
        page = self._items(run_id, after)
        response = self._render(request, "items.html", run_id=run_id, **page)
        # Where the next fragment starts, and whether there is one already.
        response.headers["x-last"] = str(page["last"])
        response.headers["x-more"] = "1" if page["more"] else "0"
        return response

    async def run_live(self, request: Request) -> Response:
        """``events`` (the last recorded event's number) while the run records them, then
        ``ended`` once it has ended."""
        run_id = request.path_params["run_id"]
        self._run(run_id)
        after = _integer(request.query_params.get("after"), "after") or 0

        async def follow() -> AsyncIterator[dict[str, str]]:
            seen = after
            while True:
                run = self._run(run_id)
                if run.events_count > seen:
                    seen = run.events_count
                    yield {"event": "events", "data": str(seen)}
                if run.finished:
                    yield {"event": "ended", "data": run.status}
                    return
                await anyio.sleep(POLL)

        return EventSourceResponse(follow(), ping=15)

    async def run_transcript(self, request: Request) -> Response:
        run = self._run(request.path_params["run_id"])
        path = Path(run.transcript) if run.transcript else None
        if path is None or not path.is_file():
            raise PageError(404, f"run {run.id} has no transcript file")
        return FileResponse(path, media_type="application/x-ndjson", filename=f"{run.id}.jsonl")

    async def run_envelope(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        self._run(run_id)
        full = self.store.get(run_id)
        if full is None or full.envelope is None:
            raise PageError(404, f"run {run_id} has no envelope yet")
        body = json.dumps(full.envelope, ensure_ascii=False, indent=2).encode()
        disposition = f'attachment; filename="{run_id}.json"'
        return Response(body, media_type="application/json",
                        headers={"content-disposition": disposition})  # fmt: skip

    async def run_stop(self, request: Request) -> Response:
        """The CLI's ``stop``, for a form that carries :func:`form_token`."""
        run_id = request.path_params["run_id"]
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                raise PageError(413, f"form over {MAX_FORM_BYTES} bytes")
        form = dict(parse_qsl(body.decode("utf-8", "replace")))
        if not form_token_ok(self.settings.token, form.get("form", "")):
            raise PageError(403, "stop: the form's token is missing or not this start's")
        self._run(run_id)
        from acp_bridge._runs.caller.handle import stop_run  # the CLI's stop, as it loads it

        try:
            stop_run(run_id, store=self.settings.store)
        except BridgeError as exc:  # a foreground run: stopped where it runs
            raise PageError(409, str(exc)) from None
        return RedirectResponse(f"/runs/{run_id}", status_code=303)

    # --- a batch and a comparison -----------------------------------------------------

    def _batch(self, batch_id: str) -> None:
        if not batch_runs(self.store.db, batch_id, limit=1) and not comparison(
            self.store.db, batch_id
        ):
            raise PageError(404, f"no batch or comparison {batch_id[:80]!r} in {self.store.path}")

    async def batch_page(self, request: Request) -> Response:
        batch_id = request.path_params["batch_id"]
        liveness.reap(self.store)  # a dead batch process's tasks show lost, as in ps
        self._batch(batch_id)
        mark = digest(batch_mark(self.store.db, batch_id))  # before the reads it stands for
        counts = batch_counts(self.store.db, batch_id)
        return self._render(
            request,
            "batch.html",
            batch_id=batch_id,
            counts=counts,
            nodes=sorted(counts.by_node.items()),
            problems=batch_runs(self.store.db, batch_id, problems_only=True),
            tasks=batch_runs(self.store.db, batch_id),
            page=MAX_PAGE,
            mark=mark,
        )

    async def comparison_page(self, request: Request) -> Response:
        batch_id = request.path_params["batch_id"]
        liveness.reap(self.store)
        self._batch(batch_id)
        mark = digest(batch_mark(self.store.db, batch_id))
        rows = batch_runs(self.store.db, batch_id)
        decided, unreadable = None, ""
        text = comparison(self.store.db, batch_id)
        if text is not None:
            try:
                decided = CompareResult.model_validate_json(text)
            except ValidationError as exc:  # written by another version of acp-bridge
                unreadable = f"its recorded result cannot be read: {exc.error_count()} errors"
        attempts = {a.task_id: a for a in decided.attempts} if decided else {}
        winner = decided.winning if decided else None
        diff, cut = _diff(winner.diff if winner else None)
        return self._render(
            request,
            "comparison.html",
            batch_id=batch_id,
            rows=rows,
            decided=decided,
            unreadable=unreadable,
            attempts=attempts,
            winner=winner,
            diff=diff,
            diff_cut=cut,
            mark=mark,
        )

    async def batch_live(self, request: Request) -> Response:
        """``changed`` whenever a batch's or comparison's runs did (see :func:`batch_mark`)."""
        batch_id = request.path_params["batch_id"]
        self._batch(batch_id)

        return changes_since(
            lambda: digest(batch_mark(self.store.db, batch_id)),
            request.query_params.get("mark", ""),
            "batch",
        )

    async def error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, PageError)
        return self._render(request, "error.html", exc.status, message=str(exc))


def _integer(value: str | None, name: str) -> int | None:
    if value is None or value == "":
        return None
    if not value.isdigit() or len(value) > 18:
        raise PageError(400, f"{name}: expected a whole number, got {value[:40]!r}")
    return int(value)


def _diff(path: Any) -> tuple[list[Any], bool]:
    """The lines of the run's diff file (none: no diff, or it cannot be read). Only a
    ``.diff`` file: the path comes from an envelope, and an envelope may have come from
    another machine (a batch node), so it never names just any file to show."""
    if not isinstance(path, str) or not path.endswith(".diff"):
        return [], False
    try:
        with Path(path).open("rb") as file:
            data = file.read(MAX_DIFF_BYTES + 1)
    except OSError:
        return [], False
    lines, cut = diff_lines(data[:MAX_DIFF_BYTES].decode("utf-8", "replace"))
    return lines, cut or len(data) > MAX_DIFF_BYTES


def build_app(settings: Settings) -> Starlette:
    pages = Pages(settings)
    return Starlette(routes=pages.routes(), exception_handlers={PageError: pages.error})
