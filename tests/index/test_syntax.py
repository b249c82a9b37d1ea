"""The cheap readings of libcst nodes agree with libcst's own: string literals and docstrings."""

from __future__ import annotations

import ast
import warnings

import libcst as cst
import pytest

from rlmap.index.syntax import docstring, literal_value

LITERALS = [
    "''",
    '""',
    "'k'",
    '"next"',
    "''''''",
    '""""""',
    '"""a "quoted" b"""',
    "'''it's'''",
    '""""a"""',
    '\'"""\'',
    "\"''\"",
    '"""two\nlines"""',
    '"tab\\there"',
    "'\\n'",
    "r'\\d+'",
    "b'bytes'",
    "rb'\\x00'",
    "u'unicode'",
    "'\\N{BULLET}'",
    "'é ✓'",
]


@pytest.mark.parametrize("raw", LITERALS)
def test_literal_value_is_literal_eval(raw: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = ast.literal_eval(raw)
    value = literal_value(raw)
    assert value == expected
    assert type(value) is type(expected)


DOCSTRINGS = [
    'def f():\n    """Doc.\n\n    More.\n    """\n',
    "def f():\n    '''One'''; x = 1\n",
    "def f(): 'inline'\n",
    "def f():\n    x = 'not a docstring'\n",
    "def f():\n    if x:\n        'no'\n",
    "def f():\n    b'bytes'\n",
    "def f():\n    'a' 'b'\n",
    "def f():\n    f'{x}'\n",
    "def f():\n    r'\\d'\n",
    "def f():\n    '  indented\\n  more'\n",
    "class C:\n    '''Class doc.'''\n",
    "class C: pass\n",
]


@pytest.mark.parametrize("code", DOCSTRINGS)
def test_docstring_is_get_docstring(code: str) -> None:
    module = cst.parse_module(code)
    node = module.body[0]
    assert isinstance(node, (cst.FunctionDef, cst.ClassDef))
    assert docstring(node) == node.get_docstring()


@pytest.mark.parametrize("code", ['"""Module doc."""\nx = 1\n', "x = 1\n", "", "'a' 'b'\n", "if x:\n    'no'\n"])
def test_module_docstring_is_get_docstring(code: str) -> None:
    module = cst.parse_module(code)
    assert docstring(module) == module.get_docstring()


def test_a_long_guard_is_cut_before_a_name_not_inside_it() -> None:
    """A guard longer than the records keep was cut in the middle of a name
    (``... and (self._wrapped_policy_uncompile...``, ``Collector._maybe_make_final_rollout``), which
    reads as another name: it is cut before the dotted name the limit falls in."""
    from rlmap.index.lines import TEXT_LIMIT, shorten

    head = "not (not make_rollout and hasattr(policy, 'out_keys') and " + "x" * (TEXT_LIMIT - 90)
    text = head + " and self._wrapped_policy_uncompiled.out_keys)"
    cut = shorten(text)
    assert len(cut) <= TEXT_LIMIT
    assert cut == head + " and ..."
    long_name = "y" * (TEXT_LIMIT + 10)  # one name longer than the limit: cut anyway
    assert shorten(long_name) == long_name[: TEXT_LIMIT - 3] + "..."
