"""gcd.store.new_entry makes the StoredEntry the dataclass makes, only faster."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.gcd.params import SharedParams
from pyjoynr.gcd.store import COLUMNS, StoredEntry, entry_of, new_entry, row_values

VALUES = ("g1", "p1", "d", "test/I", 1, 0, 2, "GLOBAL", True, "[]", 10, 20, "", "joynr/cc/c",
          "c")


def test_a_new_entry_is_the_dataclass_entry() -> None:
    made, reference = new_entry(*VALUES), StoredEntry(*VALUES)
    assert type(made) is StoredEntry
    assert made == reference and hash(made) == hash(reference) and repr(made) == repr(reference)
    assert row_values(made) == VALUES and made.key == ("g1", "p1")
    assert dataclasses.astuple(made) == VALUES
    assert dataclasses.replace(made, priority=5) == StoredEntry(*VALUES[:6], 5, *VALUES[7:])
    assert pickle.loads(pickle.dumps(made)) == reference
    assert copy.copy(made) == reference


def test_a_new_entry_is_frozen() -> None:
    made = new_entry(*VALUES)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.priority = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del made.domain  # type: ignore[misc]
    assert not hasattr(made, "__dict__")


def test_a_new_entry_takes_exactly_the_fields() -> None:
    with pytest.raises(TypeError):
        new_entry(*VALUES[:-1])
    with pytest.raises(TypeError):
        new_entry(*VALUES, "one too many")
    assert len(COLUMNS) == len(VALUES)


@given(st.tuples(*[st.one_of(st.text(max_size=8), st.integers(), st.booleans(), st.none())
                   for _ in COLUMNS]))
def test_any_values_make_equal_entries(values: tuple[object, ...]) -> None:
    made, reference = new_entry(*values), StoredEntry(*values)  # type: ignore[arg-type]
    assert made == reference and row_values(made) == values


def test_an_entry_of_shared_parameters_takes_its_fields_by_name() -> None:
    params = SharedParams(VALUES[1:])
    made = entry_of("g2", params)
    assert type(made) is StoredEntry and made == StoredEntry("g2", *VALUES[1:])
    assert params.to_entry("g2") == made
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.gbid = "g3"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        entry_of("g2", object())  # (a source without the fields)
