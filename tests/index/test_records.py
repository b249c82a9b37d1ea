"""The records' quick ``__init__`` builds what the dataclass's own would."""

from __future__ import annotations

import dataclasses

import pytest

from rlmap.index import records as R

QUICK = [R.Symbol, R.CallSite, R.AttributeAccess, R.ReturnSite, R.KeyAccess, R.ImportRecord, R.LocalBinding]


@pytest.mark.parametrize("cls", QUICK, ids=lambda cls: cls.__name__)
def test_quick_init_sets_every_field_as_given_or_defaulted(cls: type) -> None:
    fields = dataclasses.fields(cls)
    required = [field for field in fields if field.default is dataclasses.MISSING]
    given = {field.name: f"<{field.name}>" for field in required}
    record = cls(**given)
    for field in fields:
        expected = given.get(field.name, field.default)
        assert getattr(record, field.name) == expected
    full = {field.name: f"<{field.name}>" for field in fields}
    assert cls(*full.values()) == cls(**full)
    assert [getattr(cls(**full), name) for name in full] == list(full.values())
    with pytest.raises(TypeError):
        cls()
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.__setattr__(fields[0].name, "changed")
    assert dataclasses.replace(record, **{fields[0].name: "x"}) == cls(**{**given, fields[0].name: "x"})
