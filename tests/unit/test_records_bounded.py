"""BoundedTable and BoundedList: what does not fit is dropped and counted, never kept under
another key, for any sequence of additions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from acp_bridge._records.bounded import BoundedList, BoundedTable

KEYS = st.one_of(st.text(alphabet="ab", max_size=6), st.tuples(st.text("ab", max_size=6)))


@given(st.lists(st.tuples(KEYS, st.integers()), max_size=60), st.integers(0, 8))
def test_a_table_keeps_each_value_under_its_own_key_and_counts_the_rest(
    additions: list[tuple[object, int]], cap: int
) -> None:
    table: BoundedTable[object, int] = BoundedTable("things", cap, key_chars=4)
    expected: dict[object, int] = {}
    full = oversize = 0
    for index, (key, value) in enumerate(additions):
        use_put = index % 2 == 0
        kept = table.put(key, value) if use_put else table.add(key, lambda v=value: v) is not None
        long = any(len(part) > 4 for part in (key if isinstance(key, tuple) else (key,)))
        if key in expected:
            assert kept
            if use_put:
                expected[key] = value
        elif long:
            assert not kept
            oversize += 1
        elif len(expected) >= cap:
            assert not kept
            full += 1
        else:
            assert kept
            expected[key] = value
    assert dict(table) == expected
    assert (table.full, table.oversize, table.dropped()) == (full, oversize, full + oversize)
    warning = table.warning()
    assert (warning is None) == (full + oversize == 0)
    if warning is not None:
        assert warning.startswith("things: ")
    table.reset()
    assert not table and table.dropped() == 0 and table.warning() is None


def test_find_takes_any_json_value_as_a_key() -> None:
    table: BoundedTable[str, int] = BoundedTable("ids", 4)
    table.put("a", 1)
    for key in ([1], {"a": 1}, ("a", [1]), None, 3.5, "b"):
        assert table.find(key) is None
    assert table.find("a") == 1


@given(st.lists(st.integers(), max_size=30), st.integers(0, 10))
def test_a_list_keeps_the_first_cap_items_and_counts_the_rest(items: list[int], cap: int) -> None:
    kept: BoundedList[int] = BoundedList("items", cap)
    assert [kept.add(item) for item in items] == [i < cap for i in range(len(items))]
    assert list(kept) == items[:cap] and kept.full == max(0, len(items) - cap)
    assert (kept.warning() is None) == (len(items) <= cap)
