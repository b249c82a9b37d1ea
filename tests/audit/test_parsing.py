"""Docs are parsed, not grepped: docutils for rst, markdown-it (with MyST's syntax) for Markdown.

The probe cases of the issue, each through the real audit on the fixture package: what a line
regex missed (a role split over two lines, MyST roles and labels) and what it reported wrongly
(roles in comments, in ``code-block:: rst``, in Markdown code spans).
"""

from __future__ import annotations

from pathlib import Path

from rlmap.audit.mdscan import parse_markdown
from rlmap.audit.rstscan import parse_rst
from tests.audit.test_audit import fixture_audit, write_docs
from tests.conftest import Run


def located(findings: list[dict[str, object]], rule: str) -> list[tuple[object, object, object]]:
    return sorted((f["path"], f["line"], f["name"]) for f in findings if f["rule"] == rule)


def test_a_role_split_over_two_lines_is_found_on_its_first_line(run: Run, tmp_path: Path) -> None:
    page = ".. currentmodule:: pkg.collector\n\nThe collector, see :class:`the old\none <Colector>` here.\n\n* see :class:`old\n  <Colector>`\n"
    docs = write_docs(tmp_path, {"page.rst": page})
    code, findings, _ = fixture_audit(run, docs, "--rule", "stale-ref")
    assert located(findings, "stale-ref") == [("page.rst", 3, "Colector"), ("page.rst", 6, "Colector")]
    assert code == 1


def test_roles_in_comments_and_non_python_code_are_not_references(run: Run, tmp_path: Path) -> None:
    page = """
        .. currentmodule:: pkg.collector

        .. a comment naming :class:`Gone` and :ref:`no_label`
           over two lines :class:`AlsoGone`

        .. code-block:: rst

            :class:`InCode` and :ref:`in_code_label`

        ::

            $ shell :class:`InLiteral`

        .. graphviz::

            digraph { a -> b [label=":class:`InDot`"] }

        Only this one: :class:`Stale`.
    """
    docs = write_docs(tmp_path, {"page.rst": page})
    code, findings, _ = fixture_audit(run, docs, "--rule", "stale-ref", "--rule", "broken-label")
    assert [(f["rule"], f["name"]) for f in findings] == [("stale-ref", "Stale")]
    assert findings[0]["line"] == 18
    assert code == 1


def test_myst_roles_and_labels(run: Run, tmp_path: Path) -> None:
    page = """
        (intro-label)=
        # Intro

        See {ref}`intro-label`, {ref}`missing-label`, {py:class}`pkg.collector.Collector` and
        {class}`pkg.collector.Colector`.

        % a MyST comment: {class}`pkg.Gone`
        A code span is text: `` :ref:`not_a_label` `` and ``{ref}`nor_this` ``.

        ```python
        # a Python block is an example, not a role
        ```

        ```text
        {class}`pkg.InText`
        ```
    """
    docs = write_docs(tmp_path, {"page.md": page})
    code, findings, _ = fixture_audit(run, docs, "--rule", "stale-ref", "--rule", "broken-label")
    assert located(findings, "broken-label") == [("page.md", 4, "missing-label")]
    assert located(findings, "stale-ref") == [("page.md", 5, "pkg.collector.Colector")]
    assert code == 1


def test_unknown_roles_and_directives_neither_fail_nor_print_nor_read_files(run: Run, tmp_path: Path) -> None:
    secret = tmp_path / "secret.rst"
    secret.write_text(":class:`pkg.Leaked`\n")
    page = f"""
        .. include:: {secret}

        .. literalinclude:: {secret}

        .. raw:: html
           :file: {secret}

        .. csv-table::
           :file: {secret}

        .. no-such-directive:: with argument
           :no-such-option: 1

           Body with :class:`pkg.Inside` and :no-such-role:`x`.

        .. deprecated:: 0.8 use :class:`pkg.Versioned` instead
    """
    docs = write_docs(tmp_path, {"page.rst": page})
    code, findings, err = fixture_audit(run, docs, "--rule", "stale-ref")
    assert sorted(f["name"] for f in findings) == ["pkg.Inside", "pkg.Versioned"]
    assert err == ""
    assert code == 1


def test_exact_places_and_labels() -> None:
    parts = parse_rst(".. _First-Label:\n\nTitle\n=====\n\nx :meth:`a.b` and ``pkg.c.d`` :class:`~pkg.E`\n")
    assert parts.labels == {"first-label"}
    assert [(r.kind, r.target, r.place.line, r.place.column) for r in parts.refs] == [
        ("meth", "a.b", 6, 3),
        ("literal", "pkg.c.d", 6, 19),
        ("class", "pkg.E", 6, 31),
    ]
    text = ".. _First-Label:\n\nTitle\n=====\n\nx :meth:`a.b` and ``pkg.c.d`` :class:`~pkg.E`\n"
    assert [text[r.span[0] : r.span[1]] for r in parts.refs if r.span] == ["a.b", "pkg.c.d", "pkg.E"]
    markdown = parse_markdown("# T\n\nSee {class}`X <pkg.Y>` and `pkg.z.w`.\n")
    assert [(r.kind, r.target, r.place.line, r.place.column) for r in markdown.refs] == [
        ("class", "pkg.Y", 3, 5),
        ("literal", "pkg.z.w", 3, 28),
    ]


def test_code_examples_are_checked_statically(run: Run, tmp_path: Path) -> None:
    page = """
        Examples
        ========

        A literal block that parses as Python::

            from pkg.collector import Colector
            import pkg.collector as col
            col.Collector.rollout(None)
            col.Collector.gone

        A doctest:

        >>> from pkg import buffers
        >>> buffers.Bufer()
        >>> buffers.Buffer()

        A literal block that is not Python::

            $ pkg.collector.Colector --help

        .. code-block:: console

            import pkg.nothing
    """
    markdown = """
        # Example

        ```python
        from pkg.envs.base import Env, Gone
        ```

        ```pycon
        >>> import pkg.nope
        ```
    """
    docs = write_docs(tmp_path, {"page.rst": page, "page.md": markdown})
    code, findings, _ = fixture_audit(run, docs, "--rule", "stale-example-ref")
    assert located(findings, "stale-example-ref") == [
        ("page.md", 4, "pkg.envs.base.Gone"),
        ("page.md", 8, "pkg.nope"),
        ("page.rst", 6, "pkg.collector.Colector"),
        ("page.rst", 9, "pkg.collector.Collector.gone"),
        ("page.rst", 14, "pkg.buffers.Bufer"),
    ]
    assert code == 1


def test_the_name_beside_a_line_anchor_is_read_from_literals_holding_backticks() -> None:
    # a docstring line quoted as the anchor's name: rst writes it ``... `True` ...`` or as
    # :code:`...` with escapes, Markdown in a longer fence; the name before it is not the one
    from rlmap.audit.docscan import _beside

    cases = [
        ("in ``GAE``: ``Default is `True` if not compiling.`` (`x.py:12 <u>`__)", True, "compiling"),
        ("in ``GAE``: :code:`a \\`b\\` c` (`x.py:12 <u>`__)", True, "c"),
        ("in `GAE`: ``` if ``i + 1`` is the same ``` ([x.py:12](u))", False, "same"),
        ("in `GAE`: `` Default is `True` `` ([x.py:12](u))", False, "`True`"),
        ("`A` ([a.py:1](u)), `B.call` ([x.py:12](u))", False, "call"),
        ("in ``GAE``: ``GAE.forward`` (`x.py:12 <u>`__)", True, "forward"),
    ]
    for text, is_rst, name in cases:
        at = text.index("x.py:12")
        assert _beside(text, at, at + len("x.py:12"), is_rst) == name, text
