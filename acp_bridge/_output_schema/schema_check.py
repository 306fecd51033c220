"""An answer checked against its ``output_schema`` in a child process that a deadline or a
cancel can kill: the checker is a parser of hostile input.

Why a child: validating an agent's answer runs the operator's schema over the agent's data,
and both can make the work unbounded in ways no in-process check can stop — a ``pattern``
that backtracks exponentially on a crafted string (``re`` cannot be interrupted), ``uniqueItems``
over 100 000 objects (quadratic), a ``$ref`` that refers to itself. In-process, that work
blocked the event loop: the run missed T + 5 s and Ctrl-C did nothing. In a child, the run's
deadline and its cancel end it (SIGKILL to its group), whatever it is doing, and a memory limit
bounds it too. It costs a Python start and the jsonschema import (~0.15 s), only for runs
whose label has a schema file.

What the child may resolve: the files the operator registered (``schemas:`` in the config),
by their file URI and their ``$id``. No ``$ref`` is ever fetched (no network, no other file):
one to anything else is an ``output_schema`` error that names it. Every failure of the check —
recursion without end, a number too large for ``multipleOf``, an invalid pattern, memory, a
crash — is an :class:`~acp_bridge.errors.OutputSchemaError`, never an internal error.

Run as ``python -m acp_bridge._output_schema.schema_check``: a header line of JSON (``root``,
``resources``) then the answer's JSON text on stdin; one line of JSON on stdout
(``{"error": null}`` or the first error, in words).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from acp_bridge._os.process.procgroup import ProcessGroup
from acp_bridge._output_schema.structured_output import (
    SchemaRegistry,
    parse_structured_output,
    strip_code_fence,
)
from acp_bridge.errors import OutputSchemaError

MEMORY_LIMIT = 2 << 30
"""Address space the checker may use (bytes)."""
OUTPUT_LIMIT = 64 << 10
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_START = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from acp_bridge._output_schema.schema_check import main; main()"
)


async def first_schema_error(
    root: str, resources: Mapping[str, Any], instance: str, *, timeout: float
) -> str | None:
    """The first way ``instance`` (JSON text, already parsed once by the bounded parser)
    breaks the schema registered at URI ``root`` (None: it validates). ``resources``: every
    registered schema, by URI. Bounded by ``timeout`` (the run's deadline: a check that
    needs longer is an error, never a reason to pass it) and by the caller's cancel scope:
    the child is killed either way."""
    header = json.dumps({"root": root, "resources": resources}, ensure_ascii=False)
    env = {"PATH": os.defpath, "LC_ALL": "C.UTF-8"}  # nothing of ours: no secret to expose
    group = await ProcessGroup.start(
        [sys.executable, "-I", "-c", _START, _PACKAGE_ROOT],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        with anyio.move_on_after(timeout) as scope:
            out, err = await _exchange(group, header.encode() + b"\n" + instance.encode())
        if scope.cancelled_caught:
            return f"checking the answer against its schema did not finish within {timeout:.3g}s"
    finally:
        with anyio.CancelScope(shield=True):
            await group.kill(wait=1.0)
            await group.aclose()
    try:
        reply = json.loads(out)
        error = reply["error"]
    except (ValueError, KeyError, TypeError):
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        return f"the schema check failed (exit {group.returncode}): {tail[0][:300]}"
    return None if error is None else str(error)


async def _exchange(group: ProcessGroup, data: bytes) -> tuple[bytes, bytes]:
    """Write ``data`` to the child's stdin, read its stdout and stderr (bounded) to the end."""
    process = group.process
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    out: list[bytes] = []
    err: list[bytes] = []

    async def write() -> None:
        assert process.stdin is not None
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.send(data)
        await process.stdin.aclose()

    async def read(stream: Any, into: list[bytes]) -> None:
        size = 0
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
            while True:
                chunk = await stream.receive()
                if size < OUTPUT_LIMIT:
                    into.append(chunk)
                size += len(chunk)

    async with anyio.create_task_group() as tg:
        tg.start_soon(write)
        tg.start_soon(read, process.stdout, out)
        tg.start_soon(read, process.stderr, err)
    await process.wait()
    return b"".join(out), b"".join(err)


def check_error(root: str, resources: Mapping[str, Any], instance: Any) -> str | None:
    """In the child: the first error of ``instance`` against the schema at ``root``."""
    from jsonschema.exceptions import best_match
    from jsonschema.validators import validator_for
    from referencing import Registry, Resource
    from referencing.exceptions import NoSuchResource, Unresolvable
    from referencing.jsonschema import DRAFT202012 as DRAFT_LATEST
    from referencing.jsonschema import specification_with

    def retrieve(uri: str) -> Resource[Any]:
        raise NoSuchResource(uri)  # nothing is fetched: only the registered files resolve

    cls = validator_for(resources[root])
    spec = specification_with(cls.META_SCHEMA.get("$schema", ""), default=DRAFT_LATEST)
    registry: Registry[Any] = Registry(retrieve=retrieve)  # type: ignore[call-arg]
    for uri, contents in resources.items():
        resource = Resource.from_contents(contents, default_specification=spec)
        registry = registry.with_resource(uri, resource)
        if (own := resource.id()) is not None:
            registry = registry.with_resource(own, resource)
    validator = cls({"$ref": root}, registry=registry)
    try:
        schema_error = best_match(cls(cls.META_SCHEMA).iter_errors(resources[root]))
        if schema_error is not None:
            return f"the schema is not a valid JSON Schema: {schema_error.message[:500]}"
        error = best_match(validator.iter_errors(instance))
    except Unresolvable as exc:
        return f"the schema refers to {exc.ref!r}, which is no registered schema file"
    except RecursionError:
        return "the schema refers to itself without end, or the answer nests too deeply to check"
    except OverflowError:
        return "a number in the answer is too large to check against the schema"
    except MemoryError:
        return "checking the answer against its schema took too much memory"
    except Exception as exc:  # a broken pattern, anything else: the check's failure, in words
        return f"the answer could not be checked against its schema: {type(exc).__name__}: {exc}"
    if error is None:
        return None
    where = error.json_path if error.path else "the answer"
    return f"at {where}: {error.message[:2000]}"


def main() -> None:
    """The child: header and answer on stdin, the verdict on stdout."""
    with contextlib.suppress(ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    header = json.loads(sys.stdin.buffer.readline())
    instance = json.loads(sys.stdin.buffer.read())
    try:
        error = check_error(header["root"], header["resources"], instance)
    except MemoryError:
        error = "checking the answer against its schema took too much memory"
    sys.stdout.write(json.dumps({"error": error}) + "\n")


async def check_structured_output(
    text: str, label: str, registry: SchemaRegistry | None, *, timeout: float
) -> Any:
    """The JSON value of a worker's answer under ``label``: parsed by the bounded parser, then
    validated in the child when the label has a schema file. OutputSchemaError otherwise."""
    body = strip_code_fence(text)
    value = parse_structured_output(body, label)
    found = registry.resources(label) if registry is not None else None
    if found is not None:
        root, resources = found
        error = await first_schema_error(root, resources, body, timeout=timeout)
        if error is not None:
            raise OutputSchemaError(f"output does not match {label}: {error}")
    return value


if __name__ == "__main__":
    main()
