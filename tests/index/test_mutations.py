"""Attribute accesses that change the attribute's object in place are mutations, not reads."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import model_of, write_package

SOURCE = """
class Holder:
    def __init__(self):
        self.items = []
        self.table = {}
        self.state = None

    def work(self, td, value):
        self.items.append(value)
        self.table["k"] = value
        del self.table["k"]
        self.state.zero_()
        self.state.update(td)
        self.state.set("key", value)
        copy = self.state.exclude("key")
        self.state.exclude("key", inplace=True)
        print(self.items, copy)
        td.apply(abs, out=self.state)
        refill(self.items)
        return self.table.get("k")
"""


def test_in_place_changes_are_mutations_with_their_operation(tmp_path: Path) -> None:
    root = write_package(tmp_path, {"box/__init__.py": "", "box/holder.py": SOURCE})
    model = model_of(root, "box")

    def accesses(attribute: str) -> list[tuple[str, str]]:
        found = model.attribute_accesses(f"box.holder.Holder.{attribute}")
        return [(a.kind, a.operation) for a in found if a.function.endswith(".work")]

    # handed to a call that may change it (print only reads what it is given)
    assert accesses("items") == [("mutate", "append"), ("read", ""), ("read", "passed to refill")]
    assert accesses("table") == [("mutate", "[]="), ("mutate", "del []"), ("read", "")]
    # zero_ (torch's in-place convention), update (a mapping's), set (writes a tensordict key),
    # exclude only with inplace=True: by default it returns a copy
    assert accesses("state") == [
        ("mutate", "zero_"),
        ("mutate", "update"),
        ("mutate", "set"),
        ("read", ""),
        ("mutate", "exclude"),
        ("mutate", "out= of td.apply"),  # ``out=``: written in place
    ]


def test_without_the_extension_a_key_writing_method_is_a_read(tmp_path: Path) -> None:
    root = write_package(tmp_path, {"box/__init__.py": "", "box/holder.py": SOURCE})
    model = model_of(root, "box", extensions=())
    line = next(n for n, text in enumerate(SOURCE.lstrip("\n").splitlines(), 1) if 'set("key"' in text)
    kinds = [(a.kind, a.operation) for a in model.attribute_accesses("box.holder.Holder.state") if a.line == line]
    assert kinds == [("read", "")]  # ``set`` is not a mutator of plain Python objects
