"""The model's layers: the cache key covers them all, and the hierarchy walks answer as documented."""

from __future__ import annotations

from pathlib import Path

import rlmap
from rlmap.model.codemodel import MODEL_MODULES
from rlmap.model.mro import first_in_mro, last_in_mro, mro, nearest_in_bases

# C(A, B), A(Base), B(Root), Base(Root): ``m`` is defined in Base and B.
BASES = {"C": ("A", "B"), "A": ("Base",), "B": ("Root",), "Base": ("Root",), "Root": ()}
DEFINES_M = {"Base", "B"}


def test_model_modules_lists_every_module_the_model_is_computed_by() -> None:
    folder = Path(rlmap.__file__).parent / "model"
    found = {f"model.{path.stem}" for path in folder.glob("*.py")} - {"model.__init__", "model.session"}
    assert set(MODEL_MODULES) == found


def test_mro_is_c3() -> None:
    assert mro(BASES, "C") == ("C", "A", "Base", "B", "Root")  # Root after B, which derives from it


def test_first_in_mro_and_nearest_in_bases_differ_on_a_far_first_base() -> None:
    own = {cls: f"{cls}.m" for cls in DEFINES_M}.get
    assert first_in_mro(BASES, "C", {}, own) == "Base.m"  # the resolver's member lookup
    assert nearest_in_bases(BASES, "C", {}, own) == "B.m"  # CodeModel.find_member


def test_last_in_mro_finds_the_most_basic_class() -> None:
    assert last_in_mro(BASES, "C", {}, lambda cls: cls in {"A", "Root"}) == "Root"
    assert last_in_mro(BASES, "A", {}, lambda cls: cls == "A") == "A"


def test_walks_survive_a_cycle() -> None:
    cyclic = {"X": ("Y",), "Y": ("X",)}
    assert mro(cyclic, "X") == ("X", "Y")
    assert first_in_mro(cyclic, "X", {}, {}.get) is None
    assert nearest_in_bases(cyclic, "X", {}, {}.get) is None
