"""The index stage: records extracted from one file, and their line numbers."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from rlmap.index.extract import extract_module
from rlmap.index.records import ModuleIndex
from rlmap.index.source import SourceTree

TENSORDICT = ("tensordict",)


def extract(code: str, path: str = "pkg/mod.py") -> ModuleIndex:
    return extract_module(textwrap.dedent(code).lstrip("\n").encode(), path, extensions=TENSORDICT)


def test_symbols_kinds_lines_signatures_docstrings() -> None:
    index = extract(
        '''
        """Module doc."""
        import contextlib

        STATE = contextlib.nullcontext()
        LIMIT: int = 3


        class Base(object):
            """A base.

            More text.
            """

            flag = True

            @staticmethod
            def make(x: int, *args, key: str = "k", **kwargs) -> "Base":
                return Base()

            @property
            def mode(self):
                return self.flag

            async def run(self, a, /, b=1):
                def nested():
                    pass
        '''
    )
    by_name = {symbol.qualname: symbol for symbol in index.symbols}
    assert by_name["pkg.mod"].kind == "module"
    assert by_name["pkg.mod"].doc_first_line == "Module doc."
    assert (by_name["pkg.mod.STATE"].kind, by_name["pkg.mod.STATE"].line) == ("variable", 4)
    assert by_name["pkg.mod.STATE"].value == "contextlib.nullcontext()"
    assert (by_name["pkg.mod.LIMIT"].annotation, by_name["pkg.mod.LIMIT"].value) == ("int", "3")
    base = by_name["pkg.mod.Base"]
    assert (base.kind, base.line, base.bases, base.doc_first_line) == ("class", 8, ("object",), "A base.")
    assert by_name["pkg.mod.Base.flag"].kind == "attribute"
    make = by_name["pkg.mod.Base.make"]
    assert (make.kind, make.line, make.decorators) == ("method", 17, ("staticmethod",))  # 16 is the decorator
    assert make.signature == '(x: int, *args, key: str = "k", **kwargs) -> "Base"'
    assert make.returns == '"Base"'
    assert make.params == (("x", "int"), ("args", ""), ("key", "str"), ("kwargs", ""))
    assert not make.has_docstring
    assert (by_name["pkg.mod.Base.mode"].kind, by_name["pkg.mod.Base.mode"].line) == ("property", 21)
    run = by_name["pkg.mod.Base.run"]
    assert (run.line, run.end_line, run.signature) == (24, 26, "(self, a, /, b=1)")
    assert by_name["pkg.mod.Base.run.nested"].kind == "function"


def test_imports_absolute_relative_aliased_star_and_local() -> None:
    index = extract(
        """
        import os.path
        import numpy as np
        from . import sibling
        from ..other import thing as other_thing
        from .sub.mod import *

        def f():
            from pkg.deep import helper
        """,
        path="pkg/inner/mod.py",
    )
    records = {(record.scope, record.name, record.target) for record in index.imports}
    assert records == {
        ("pkg.inner.mod", "os", "os"),
        ("pkg.inner.mod", "np", "numpy"),
        ("pkg.inner.mod", "sibling", "pkg.inner.sibling"),
        ("pkg.inner.mod", "other_thing", "pkg.other.thing"),
        ("pkg.inner.mod", "*", "pkg.inner.sub.mod"),
        ("pkg.inner.mod.f", "helper", "pkg.deep.helper"),
    }


def test_relative_import_inside_a_package_init() -> None:
    index = extract("from .common import EnvBase\n", path="pkg/envs/__init__.py")
    assert index.module == "pkg.envs"
    assert index.is_package
    assert [(r.name, r.target) for r in index.imports] == [("EnvBase", "pkg.envs.common.EnvBase")]


def test_attribute_access_kinds_guards_and_values() -> None:
    index = extract(
        """
        class C:
            def m(self, x):
                self.a = x + 1
                self.a += 2
                if x:
                    y = self.a
                elif x is None:
                    self.b: int = 0
                else:
                    del self.a
                while self.b < 3:
                    try:
                        self.b.append(self.c)
                    except ValueError:
                        self.c = None
        """
    )
    found = [(a.attribute, a.kind, a.line, a.guards, a.value) for a in index.attributes]
    assert found == [
        ("a", "write", 3, (), "x + 1"),
        ("a", "augmented", 4, (), "2"),
        ("a", "read", 6, ("if x",), ""),
        ("b", "write", 8, ("not (x)", "elif x is None"), "0"),
        ("a", "delete", 10, ("not (x)", "else (not (x is None))"), ""),
        ("b", "read", 11, (), ""),
        ("b", "mutate", 13, ("while self.b < 3",), ""),  # append changes it in place
        ("c", "read", 13, ("while self.b < 3",), ""),
        ("c", "write", 15, ("while self.b < 3", "except ValueError"), "None"),
    ]
    assert all(access.owner == "pkg.mod.C" and access.function == "pkg.mod.C.m" for access in index.attributes)


def test_tensordict_keys_every_form() -> None:
    index = extract(
        """
        def f(td, kwargs):
            td.get("a")
            td.set(("n", "k"), 1)
            td["b"] = td["c"]
            del td["d"]
            td.pop("e")
            td.exclude("f", ("g", "h"))
            if "i" not in td.keys(True):
                pass
            mod = Module(in_keys=["j", ("k", "l")], out_keys="m")
            kwargs.get("not_a_key")
            td.get(some_variable)
        """
    )
    found = [(a.key, a.kind, a.how, a.line) for a in index.keys if a.key]
    symbolic = [(a.expression, a.kind, a.line) for a in index.keys if not a.key]
    assert symbolic == [("some_variable", "read", 12)]  # resolved to constants by the model
    assert found == [
        (("a",), "read", "get", 2),
        (("n", "k"), "write", "set", 3),
        (("b",), "write", "[]", 4),
        (("c",), "read", "[]", 4),
        (("d",), "delete", "[]", 5),
        (("e",), "read", "pop", 6),
        (("f",), "delete", "exclude", 7),
        (("g", "h"), "delete", "exclude", 7),
        (("i",), "check", "in keys()", 8),
        (("j",), "read", "in_keys", 10),
        (("k", "l"), "read", "in_keys", 10),
        (("m",), "write", "out_keys", 10),
    ]


def test_call_sites_with_text_parts_and_guards() -> None:
    index = extract(
        """
        def f(self):
            for t in range(3):
                if t:
                    self.env.step(t)
            super().close()
            make()(1)
        """
    )
    found = [(c.callee_text, c.parts, c.line, c.guards) for c in index.calls if not c.attribute_read]
    reads = [(c.callee_text, c.line) for c in index.calls if c.attribute_read]
    assert reads == [("self.env", 4)]  # ``f`` is no method: ``self`` is a plain parameter here
    assert found == [
        ("range", ("range",), 2, ()),
        ("self.env.step", ("self", "env", "step"), 4, ("for t in range(3)", "if t")),
        ("super().close", ("super()", "close"), 5, ()),
        ("super", ("super",), 5, ()),
        ("make(...)", (), 6, ()),
        ("make", ("make",), 6, ()),
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"def broken(:\n    pass\n", "syntax error"),
        (b'x = 1\ny = "caf\xe9"\n', "not valid UTF-8"),
    ],
)
def test_unreadable_file_is_a_diagnostic(data: bytes, message: str) -> None:
    index = extract_module(data, "pkg/bad.py")
    assert len(index.diagnostics) == 1
    diagnostic = index.diagnostics[0]
    assert message in diagnostic.message
    assert str(diagnostic).startswith(f"pkg/bad.py:{diagnostic.line}: ")
    assert diagnostic.line == (1 if message == "syntax error" else 2)
    assert index.symbols == ()


def test_empty_file_is_a_module_without_diagnostics() -> None:
    index = extract_module(b"", "pkg/empty.py")
    assert index.diagnostics == ()
    assert [symbol.kind for symbol in index.symbols] == ["module"]


def _lines(index: ModuleIndex) -> dict[str, list[tuple[object, ...]]]:
    return {
        "symbols": [(s.qualname, s.line) for s in index.symbols],
        "calls": [(c.callee_text, c.line) for c in index.calls],
        "attributes": [(a.attribute, a.kind, a.line) for a in index.attributes],
        "keys": [(k.key, k.line) for k in index.keys],
        "imports": [(i.name, i.line) for i in index.imports],
    }


@pytest.mark.torchrl
@pytest.mark.parametrize(
    "path",
    [
        "torchrl/collectors/_single.py",
        "torchrl/modules/tensordict_module/rnn.py",
        "torchrl/envs/transforms/_env.py",
        "torchrl/objectives/value/advantages.py",
        "torchrl/objectives/value/functional.py",
    ],
)
def test_paired_ast_lines_equal_libcst_position_provider(torchrl_source: SourceTree, path: str) -> None:
    """The fast line pairing must give exactly the lines libcst's own provider gives."""
    data = (torchrl_source.root / path).read_bytes()
    fast = extract_module(data, path, extensions=TENSORDICT)
    exact = extract_module(data, path, extensions=TENSORDICT, position_provider=True)
    assert not fast.position_fallback
    assert exact.position_fallback
    assert _lines(fast) == _lines(exact)
    assert len(fast.calls) > 100
    assert fast.keys or path.endswith("functional.py")


def test_guards_after_early_exits_and_loop_else() -> None:
    index = extract(
        """
        def f(self, a, b):
            if a or b:
                return self.fast()
            self.slow()
            for x in a:
                if not x:
                    continue
                self.use(x)
            else:
                self.done()
            if a:
                self.keep()
            self.last()
        """
    )
    guards = {c.callee_text: c.guards for c in index.calls if not c.attribute_read}
    assert guards["self.fast"] == ("if a or b",)
    assert guards["self.slow"] == ("not (a or b)",)
    assert guards["self.use"] == ("not (a or b)", "for x in a", "not (not x)")
    assert guards["self.done"] == ("not (a or b)", "else of for x in a (no break)")
    assert guards["self.last"] == ("not (a or b)",)  # ``if a: self.keep()`` does not exit


@pytest.mark.parametrize(
    ("code", "limit", "depth"),
    [
        ("x = a", 0, 4),  # Module > Assign > Name > Load
        ("x = a or b or c or d", 0, 8),  # libcst nests BooleanOperation: three levels where ast has one
        ("import a.b.c", 0, 5),  # Module > Import > alias, plus two nested Attribute
        # ConcatenatedString("a", ConcatenatedString("b", "c")): counted when it could reach the limit
        ('x = ("a" "b"\n     "c")', 5, 5),
        ('x = ("a" "b"\n     "c")', 100, 4),  # far from the limit: not counted (x's Store is deepest)
    ],
)
def test_nesting_counts_what_libcst_nests_and_ast_keeps_flat(code: str, limit: int, depth: int) -> None:
    import ast

    from rlmap.index.lines import index_ast

    _, nesting = index_ast(ast.parse(code), code.encode(), limit)
    assert (nesting.depth, nesting.line) == (depth, 1)


def test_a_match_statement_is_indexed_and_its_captures_are_locals() -> None:
    """``case`` patterns hold one pattern or a list of them; names they capture are the function's."""
    index = extract(
        """
        def pick(x):
            match x:
                case [first, *rest]:
                    return first
                case {"k": value} | Point(y=value):
                    return value
                case _:
                    return x
        """
    )
    assert index.diagnostics == ()
    returned = {row[2] for row in index.flow if row[0] == "copy" and row[1] == "pkg.mod.pick.<return>"}
    assert returned == {"pkg.mod.pick.first", "pkg.mod.pick.value", "pkg.mod.pick.x"}


def test_nodes_skip_validation_only_while_the_parser_builds_them() -> None:
    import libcst as cst

    from rlmap.index.extract import unvalidated_nodes

    with unvalidated_nodes():
        assert cst.Name("not a name").value == "not a name"  # no check ran
        assert cst.parse_module("x = (1 +\n     2)\n").code == "x = (1 +\n     2)\n"
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")  # checked again once the block is left


def test_nodes_built_in_the_unvalidated_block_are_the_nodes_libcst_builds() -> None:
    """The block's quick constructors fill every field as libcst's own do (defaults, default
    factories), and libcst's constructors are back once it is left."""
    import libcst as cst

    from rlmap.index.extract import unvalidated_nodes

    code = textwrap.dedent(
        """\
        @decorator(x, *a, k=1, **kw)
        class C(Base, metaclass=M):
            'Doc.'

            async def f(self, a: int = 1, /, b=2, *args, c, **kwargs) -> "T":
                x: int = await g(a if b else c)  # comment
                y = [i async for i in z if i] + {k: v for k, v in d.items()}
                del self.x[1:2, ::3], z
                with open(p) as (h, j):
                    return lambda q, *r: q or not r and -1 ** 2
                try:
                    raise E from e
                except* (A, B) as err:
                    pass
                finally:
                    global G
        match p:
            case [1, *rest] | {"k": _, **others} if rest:
                print(f"{x!r:>{w}}", b"b" rb"\\d", sep="")
        """
    )
    own_init = cst.Name.__init__
    expected = cst.parse_module(code)
    with unvalidated_nodes():
        built = cst.parse_module(code)
        made = (cst.Arg(value=cst.Name("x")), cst.Name("n"), cst.SimpleWhitespace(" "))
    assert cst.Name.__init__ is own_init
    assert built.deep_equals(expected)
    assert built.code == code
    assert made[0].deep_equals(cst.Arg(value=cst.Name("x")))
    assert made[0].whitespace_after_arg.deep_equals(cst.SimpleWhitespace(""))
    assert made[1].lpar == ()
    assert made[1].rpar == ()
    assert made[2].value == " "


@pytest.mark.parametrize(
    "code",
    [
        "x = " + "-" * 600 + "1\n",  # one level per byte, on one line
        "ok = 1\nx = " + ".".join(["a"] * 600) + "\n",
        "ok = 1\nx = " + " or ".join(["a"] * 600) + "\n",  # levels libcst adds where ast has none
        'x = f(1)\ny = ("' + '" "'.join(["a"] * 600) + '")\n',
        "def f():\n    return (\n        " + "-" * 600 + "1\n    )\n",  # spread over lines
    ],
)
def test_a_one_line_statement_too_deep_is_refused_with_the_exact_depth(code: str) -> None:
    """Nodes inside a one-line statement are not walked for positions; one that nests past the
    limit is still walked, and the refusal names the depth and line the full walk finds."""
    import ast

    from rlmap.index.decode import MAX_NESTING
    from rlmap.index.lines import index_ast

    _, nesting = index_ast(ast.parse(code), code.encode(), MAX_NESTING)
    assert nesting.depth > MAX_NESTING
    index = extract_module(code.encode(), "pkg/m.py")
    assert [str(diagnostic) for diagnostic in index.diagnostics] == [
        f"pkg/m.py:{nesting.line}: nesting too deep to index ({nesting.depth} levels, limit {MAX_NESTING}); file skipped"
    ]


def test_one_line_and_spread_statements_pair_as_libcst_positions_do() -> None:
    """Expressions inside one-line statements take their statement's line without pairing; a
    callee that is not a dotted name is read from the statement's ``ast`` (here the second
    call of a line, and one in a ``if c: ...`` suite); both agree with libcst's own positions."""
    code = textwrap.dedent(
        """
        def f(self, names, td):
            y = g(1) + ", ".join(h(names)); self.x.append(td["k"] == 1)
            if names: return "-".join(names)
            z = self.a.b(1) + "/".join(
                k(td["n"], self.c[0])
            )
            self.d = [m(2) for m in names if m in td.keys()]
            return z
        """
    ).lstrip("\n")
    fast = extract_module(code.encode(), "pkg/m.py", extensions=TENSORDICT)
    exact = extract_module(code.encode(), "pkg/m.py", extensions=TENSORDICT, position_provider=True)
    assert not fast.position_fallback
    assert exact.position_fallback
    assert fast == dataclasses.replace(exact, position_fallback=False)
    calls = {(call.callee_text, call.line) for call in fast.calls if not call.attribute_read}
    assert {('", ".join', 2), ('"-".join', 3), ('"/".join', 4), ("k", 5)} <= calls


def test_a_callee_on_a_literal_or_an_expression_is_named_after_its_own_text() -> None:
    """The text given for the whole callee is not its receiver's: ``", ".join`` was ``", ".join.join``."""
    index = extract(
        """
        def f(items, a, b):
            text = ", ".join(items)
            (a + b).to("cpu")
            "{}".format(a).strip()
            (1).to_bytes(2, "big")
            return (lambda x: x)(text)
        """
    )
    texts = [call.callee_text for call in index.calls if not call.attribute_read]
    expected = ['", ".join', "<expression>.to", '"{}".format(...).strip', '"{}".format', "(1).to_bytes", "lambda x: x"]
    assert texts == expected
