"""The public records a host hook sees behave as the frozen dataclasses they were: the same
constructor, equality, hash, repr and immutability (they are plain classes, on
``_records/frozen.py``, only because a dataclass compiles its methods as every command
starts)."""

import dataclasses
import inspect
from typing import Any

import pytest

from acp_bridge._acp.services.elicitation import ElicitationAnswer, ElicitationQuestion
from acp_bridge._acp.services.permissions import PermissionQuestion
from acp_bridge._acp.wire.schema import PermissionOption
from acp_bridge._os.cmdline import parse_line


@dataclasses.dataclass(frozen=True)
class _Answer:  # what ElicitationAnswer was
    action: str
    content: dict[str, Any] | None = None


@dataclasses.dataclass(frozen=True)
class _Question:  # what PermissionQuestion was
    tool_call_id: str
    title: str
    kind: str
    locations: tuple[str, ...]
    options: tuple[PermissionOption, ...]
    raw_input: Any = None
    command: str = ""
    parsed: Any = dataclasses.field(default=None, repr=False, compare=False)
    name: str = ""


OPTION = PermissionOption(option_id="yes", name="Allow once", kind="allow_once")


def test_an_answer_compares_hashes_and_shows_as_the_dataclass_did() -> None:
    answer, was = ElicitationAnswer("decline"), _Answer("decline")
    assert repr(answer) == "ElicitationAnswer(action='decline', content=None)"
    assert repr(was) == "_Answer(action='decline', content=None)"
    assert answer == ElicitationAnswer("decline") and answer != ElicitationAnswer("cancel")
    assert answer != was and answer != ("decline", None)  # another class is never equal
    assert hash(answer) == hash(ElicitationAnswer("decline")) == hash(was)
    assert len({answer, ElicitationAnswer("decline"), ElicitationAnswer("cancel")}) == 2
    with pytest.raises(TypeError):  # a dict in a field: unhashable, as before
        hash(ElicitationAnswer("accept", {"a": 1}))
    assert ElicitationAnswer("accept", {"a": 1}) == ElicitationAnswer("accept", {"a": 1})


def test_records_are_immutable() -> None:
    question = ElicitationQuestion("form", "name?")
    records: list[Any] = [
        question,
        ElicitationAnswer("cancel"),
        PermissionQuestion("", "", "", (), ()),
    ]
    for record in records:
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.title = "changed"
        with pytest.raises(dataclasses.FrozenInstanceError):
            del record.anything
    assert question.requested_schema is None and question.mode == "form"


def test_a_permission_question_leaves_the_parsed_command_out_of_equality_and_repr() -> None:
    command = parse_line("make test")
    ours = PermissionQuestion("c1", "run", "execute", ("/w",), (OPTION,), None, "make test")
    theirs = _Question("c1", "run", "execute", ("/w",), (OPTION,), None, "make test")
    parsed = PermissionQuestion(
        "c1", "run", "execute", ("/w",), (OPTION,), None, "make test", command
    )
    assert parsed.parsed is command
    assert ours == parsed and hash(ours) == hash(parsed)
    assert repr(parsed) == repr(theirs).replace("_Question", "PermissionQuestion")
    assert "parsed" not in repr(parsed)
    assert ours != PermissionQuestion("c1", "run", "execute", ("/w",), (OPTION,), name="x")


@pytest.mark.parametrize(
    ("ours", "theirs"), [(ElicitationAnswer, _Answer), (PermissionQuestion, _Question)]
)
def test_the_constructor_takes_what_the_dataclass_took(ours: type, theirs: type) -> None:
    mine, was = inspect.signature(ours).parameters, inspect.signature(theirs).parameters
    assert list(mine) == list(was)
    assert [p.default for p in mine.values()] == [p.default for p in was.values()]


def test_records_survive_pickle_and_copy_as_frozen_dataclasses_do() -> None:
    import copy
    import pickle

    from acp_bridge._acp.services.elicitation import ElicitationAnswer
    from acp_bridge._os.git.changes import FilesChanged

    answer = ElicitationAnswer("accept", {"name": "x"})
    files = FilesChanged(("/a",), notes=("cut",))
    for record in (answer, files):
        assert pickle.loads(pickle.dumps(record)) == record
        assert copy.deepcopy(record) == record and copy.copy(record) == record


def test_replaced_is_what_dataclasses_replace_gave() -> None:
    from acp_bridge._os.git.snapshots import ChangeLimits

    limits = ChangeLimits(max_files=10)
    smaller = limits.replaced(max_seconds=1.0)
    assert (smaller.max_files, smaller.max_seconds, smaller.git_timeout) == (10, 1.0, 60.0)
    assert limits.max_seconds == 5.0 and smaller != limits
    with pytest.raises(TypeError):
        limits.replaced(no_such_field=1)
