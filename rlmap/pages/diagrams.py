"""Diagrams as text: DOT (for ``.. graphviz::``) and mermaid (for Markdown), deterministic.

Nodes and edges are sorted; ids are assigned in that order; no layout engine runs here
(``rlmap generate --render-svg`` runs ``dot`` separately, when it exists).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rlmap.index.records import MODULE
from rlmap.model.codemodel import CodeModel


@dataclass(frozen=True, slots=True)
class Diagram:
    name: str  # file stem: ``collectors_rollout_flow`` -> ``collectors_rollout_flow.dot``
    dot: str
    mermaid: str


def short_name(model: CodeModel, qualname: str) -> str:
    """``torchrl.collectors._single.Collector.rollout`` -> ``Collector.rollout``."""
    module = qualname
    while module and model.node_kind(module) != MODULE:
        module = module.rpartition(".")[0]
    if module and module != qualname:
        return qualname[len(module) + 1 :]
    return qualname


CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")  # what must not reach a label
_MAX_LABEL = 200


def _label(text: str) -> str:
    """A label from the code: one line, bounded."""
    text = CONTROL.sub(" ", text)
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1] + "…"


def dot_escape(text: str) -> str:
    """Text inside a quoted DOT string."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def mermaid_escape(text: str) -> str:
    """Mermaid entity codes for what could end a label or be read as HTML; control characters out."""
    escaped = CONTROL.sub(" ", text).replace("#", "#35;").replace('"', "#quot;").replace("`", "#96;")
    return escaped.replace("<", "#lt;").replace(">", "#gt;").replace("&", "#amp;")


def _dot_quote(text: str) -> str:
    return '"' + dot_escape(_label(text)) + '"'


def _mermaid_quote(text: str) -> str:
    return '"' + mermaid_escape(_label(text)) + '"'


def render(
    name: str,
    nodes: Sequence[tuple[str, str, str]],
    edges: Sequence[tuple[str, str, str]],
    direction: str = "LR",
) -> Diagram:
    """``nodes``: (id, label, shape); ``edges``: (from id, to id, label); both already ordered."""
    dot = [
        f"digraph {name} {{",
        f"  rankdir={direction};",
        '  graph [fontname="Helvetica", fontsize=10];',
        '  node [shape=box, fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    mermaid = [f"flowchart {direction}"]
    for node_id, label, shape in nodes:
        dot.append(f"  {node_id} [label={_dot_quote(label)}{', shape=' + shape if shape != 'box' else ''}];")
        open_, close = ("([", "])") if shape == "ellipse" else ("[", "]")
        mermaid.append(f"  {node_id}{open_}{_mermaid_quote(label)}{close}")
    for source, target, label in edges:
        dot.append(f"  {source} -> {target}" + (f" [label={_dot_quote(label)}];" if label else ";"))
        mermaid.append(f"  {source} -->" + (f"|{_mermaid_quote(label)}| " if label else " ") + target)
    dot.append("}")
    return Diagram(name=name, dot="\n".join(dot) + "\n", mermaid="\n".join(mermaid) + "\n")


def diagram_from_edges(model: CodeModel, name: str, edges: Iterable[tuple[str, str]]) -> Diagram:
    ordered = sorted(set(edges))
    names = sorted({node for edge in ordered for node in edge})
    ids = {qualname: f"n{index}" for index, qualname in enumerate(names)}
    nodes = [(ids[q], short_name(model, q), "box") for q in names]
    return render(name, nodes, [(ids[a], ids[b], "") for a, b in ordered])


def call_diagram(model: CodeModel, name: str, root: str, scope: tuple[str, ...], depth: int) -> Diagram:
    """Calls from ``root`` into ``scope``, breadth first to ``depth``, labelled with lines."""
    edges: dict[tuple[str, str], str] = {}
    frontier = [root]
    seen = {root}
    for _ in range(depth):
        following = []
        for caller in frontier:
            for edge in model.callees(caller):
                if not edge.callee.startswith(scope) or not model.has_symbol(edge.callee):
                    continue
                if "override" in edge.how and len(edge.how) == 1:
                    continue  # keep the diagram to the definitions the code names
                more = len(edge.lines) - 3
                shown = "L" + ",".join(str(line) for line in edge.lines[:3])
                edges[(caller, edge.callee)] = shown + (f" and {more} more" if more > 0 else "")
                if edge.callee not in seen:
                    seen.add(edge.callee)
                    following.append(edge.callee)
        frontier = sorted(following)
    names = sorted({node for pair in edges for node in pair} | {root})
    ids = {qualname: f"n{index}" for index, qualname in enumerate(names)}
    nodes = [(ids[q], short_name(model, q), "ellipse" if q == root else "box") for q in names]
    return render(name, nodes, [(ids[a], ids[b], label) for (a, b), label in sorted(edges.items())])


def key_diagram(name: str, flows: Sequence[Any]) -> Diagram:
    """Writers -> key -> readers for each key (functions by short name); ``flows`` have
    ``key``, ``writers`` and ``readers`` (rows with a ``function``)."""
    nodes: dict[str, tuple[str, str]] = {}
    edges: set[tuple[str, str]] = set()
    for flow in flows:
        key_id = f"key:{flow.key}"
        nodes[key_id] = (flow.key, "ellipse")
        for rows, outgoing in ((flow.writers, False), (flow.readers, True)):
            for row in rows:
                if row.function is None:
                    continue
                nodes[row.function.qualname] = (row.function.display, "box")
                edges.add((key_id, row.function.qualname) if outgoing else (row.function.qualname, key_id))
    names = sorted(nodes)
    ids = {node: f"n{index}" for index, node in enumerate(names)}
    return render(
        name,
        [(ids[n], nodes[n][0], nodes[n][1]) for n in names],
        [(ids[a], ids[b], "") for a, b in sorted(edges)],
    )
