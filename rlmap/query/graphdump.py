"""``rlmap graph``: the call graph as sorted JSON or deterministic DOT text.

The JSON of a large package (torch's is 80 MB) is written as it is encoded (:func:`graph_json_chunks`):
neither its text nor the millions of pieces the encoder joins into it are ever held whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from rlmap.model.codemodel import CodeModel, Edge
from rlmap.scopes import in_scope


def scoped_edges(model: CodeModel, scopes: tuple[str, ...]) -> list[Edge]:
    return [edge for edge in model.edges() if in_scope(edge.caller, scopes)]


def _node(model: CodeModel, qualname: str) -> dict[str, Any]:
    symbol = model.symbol(qualname)
    if symbol is None:
        return {
            "qualname": qualname,
            "kind": model.node_kind(qualname) or "unresolved",
            "path": "",
            "line": 0,
            "end_line": 0,
            "documented": False,
        }
    return {
        "qualname": qualname,
        "kind": symbol.kind,
        "path": symbol.path,
        "line": symbol.line,
        "end_line": symbol.end_line,
        "documented": symbol.has_docstring,
    }


def source_of(model: CodeModel) -> dict[str, str | None]:
    """What the graph was made from; a version or commit not known is ``null``, not ``""``."""
    source = model.source
    return {"package": source.package, "version": source.version or None, "commit": source.commit or None}


def _edge(edge: Edge) -> dict[str, Any]:
    return {"caller": edge.caller, "callee": edge.callee, "lines": list(edge.lines), "how": list(edge.how)}


def _names(model: CodeModel, edges: list[Edge], scopes: tuple[str, ...]) -> list[str]:
    names = {name for name in model.qualnames() if in_scope(name, scopes)} if scopes else set(model.qualnames())
    for edge in edges:
        names.add(edge.caller)
        names.add(edge.callee)
    return sorted(names)


def graph_json(model: CodeModel, scopes: tuple[str, ...] = ()) -> dict[str, Any]:
    edges = scoped_edges(model, scopes)
    return {
        "source": source_of(model),
        "nodes": [_node(model, name) for name in _names(model, edges, scopes)],
        "edges": [_edge(edge) for edge in edges],
    }


def graph_json_chunks(model: CodeModel, scopes: tuple[str, ...] = ()) -> Iterator[str]:
    """The text of ``json.dumps(graph_json(model, scopes), indent=1, sort_keys=True)``, in the
    pieces the same encoder makes it of (``json.dumps`` joins them all first)."""
    return json.JSONEncoder(indent=1, sort_keys=True).iterencode(graph_json(model, scopes))


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def graph_dot(model: CodeModel, scopes: tuple[str, ...] = ()) -> str:
    edges = scoped_edges(model, scopes)
    names = sorted({name for edge in edges for name in (edge.caller, edge.callee)})
    lines = ["digraph calls {", "  rankdir=LR;", '  node [shape=box, fontname="monospace"];']
    for name in names:
        kind = model.node_kind(name) or "unresolved"
        style = ", style=dashed" if kind in ("external", "unresolved") else ""
        lines.append(f"  {_quote(name)} [kind={_quote(kind)}{style}];")
    for edge in edges:
        label = _quote(",".join(str(line) for line in edge.lines))
        how = _quote(",".join(edge.how))
        lines.append(f"  {_quote(edge.caller)} -> {_quote(edge.callee)} [label={label}, how={how}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


_PYCG_CALLERS = frozenset({"module", "class", "function", "method", "property"})


def _pycg_name(model: CodeModel, qualname: str) -> str | None:
    """A callee in PyCG's naming: ``builtins.len`` -> ``<builtin>.len``; ``None`` for what PyCG
    has no node for (an unresolved call, a class called without an ``__init__`` of its own)."""
    kind = model.node_kind(qualname)
    if kind == "unresolved" or qualname.startswith("?:"):
        return None
    if kind == "class":
        return None  # PyCG names a constructor call by the ``__init__`` it runs, and none is defined
    if kind in ("variable", "attribute"):
        return None  # a variable called: PyCG names the function it holds, when it is known
    if qualname.startswith("builtins."):
        return "<builtin>." + qualname.removeprefix("builtins.")
    return qualname


def graph_pycg(model: CodeModel, scopes: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """The call graph in PyCG's JSON format: ``{caller: [callee, ...]}``, every function and
    module of the source a key (with no callee, an empty list), lists sorted."""
    graph: dict[str, set[str]] = {
        symbol.qualname: set()
        for symbol in model.symbols()
        if symbol.kind in _PYCG_CALLERS and symbol.kind != "class" and in_scope(symbol.qualname, scopes)
    }
    for edge in scoped_edges(model, scopes):
        callee = _pycg_name(model, edge.callee)
        if callee is not None:
            graph.setdefault(edge.caller, set()).add(callee)
    return {caller: sorted(callees) for caller, callees in sorted(graph.items())}
