"""``rlmap graph``: the call graph as sorted JSON or deterministic DOT text."""

from __future__ import annotations

from typing import Any

from rlmap.model.codemodel import CodeModel, Edge


def _in_scope(qualname: str, scopes: tuple[str, ...]) -> bool:
    return not scopes or any(qualname == prefix or qualname.startswith(prefix + ".") for prefix in scopes)


def scoped_edges(model: CodeModel, scopes: tuple[str, ...]) -> list[Edge]:
    return [edge for edge in model.edges() if _in_scope(edge.caller, scopes)]


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


def graph_json(model: CodeModel, scopes: tuple[str, ...] = ()) -> dict[str, Any]:
    edges = scoped_edges(model, scopes)
    names = {name for name in model.qualnames() if _in_scope(name, scopes)} if scopes else set(model.qualnames())
    for edge in edges:
        names.add(edge.caller)
        names.add(edge.callee)
    return {
        "source": {"package": model.source.package, "version": model.source.version, "commit": model.source.commit},
        "nodes": [_node(model, name) for name in sorted(names)],
        "edges": [
            {"caller": edge.caller, "callee": edge.callee, "lines": list(edge.lines), "how": list(edge.how)}
            for edge in edges
        ],
    }


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
