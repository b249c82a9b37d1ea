"""A control-flow diagram of a flow section: graphviz graph objects for DOT, and mermaid.

Decision nodes carry the whole condition (wrapped, never cut); a call made by a test is drawn
once, in its decision, with its number; each branch leads on to what follows it, so branches
merge where the code does; exits (``return``, ``raise``) are terminals with no edge onward; a
``break`` leads on to what runs after its loop (past the loop's ``else``), a ``continue`` back to
the loop's header; a loop's body closes back on its header, and the loop's way out leads to what
runs after it.  Consecutive calls share one box; each phase of the loop is a cluster named after
it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import graphviz

from rlmap.pages.diagrams import CONTROL, Diagram, dot_escape, mermaid_escape

_WIDTH = 52  # characters per line of a label
_MAX_LINES = 12

# node kinds: DOT shape and attributes, mermaid brackets
START, STEP, DECISION, LOOP, EXIT, NEXT, JUMP = "start", "step", "decision", "loop", "exit", "next", "jump"
_SHAPES: dict[str, tuple[str, dict[str, str], tuple[str, str]]] = {
    START: ("ellipse", {"style": "bold"}, ("([", "])")),
    STEP: ("box", {}, ("[", "]")),
    DECISION: ("hexagon", {}, ("{", "}")),
    LOOP: ("box", {"style": "rounded,bold"}, ("[[", "]]")),
    EXIT: ("octagon", {"style": "filled", "fillcolor": "#eeeeee"}, ("([", "])")),
    NEXT: ("plaintext", {}, ("(", ")")),
    JUMP: ("box", {"style": "rounded,dashed"}, ("(", ")")),
}

Ends = list[tuple[str, str]]  # the open ends of what was drawn: (node id, label of the edge leaving it)


class _Chart:
    def __init__(self, name: str) -> None:
        self.dot = graphviz.Digraph(
            name,
            graph_attr={
                "rankdir": "TB",
                "fontname": "Helvetica",
                "fontsize": "9",
                "nodesep": "0.2",
                "ranksep": "0.15",
            },
            node_attr={"shape": "box", "fontname": "Helvetica", "fontsize": "9", "margin": "0.06,0.03"},
            edge_attr={"fontname": "Helvetica", "fontsize": "8"},
        )
        self.mermaid: list[str] = ["flowchart TB"]
        self.mermaid_edges: list[str] = []  # after every node, so that no edge pulls a node into a cluster
        self.count = 0
        self.graph: Any = self.dot
        self.indent = "  "
        self.loops: list[tuple[Ends, Ends]] = []  # the loop being drawn: its breaks, its continues

    def node(self, lines: Sequence[str], kind: str) -> str:
        """A node of one of the kinds in :data:`_SHAPES`; its label wrapped, never cut."""
        self.count += 1
        node_id = f"n{self.count}"
        text = [line for raw in lines for line in _wrap(raw)][:_MAX_LINES]
        align = "\\l" if kind == STEP and len(text) > 1 else "\\n"
        label = align.join(dot_escape(line) for line in text) + (align if align == "\\l" else "")
        shape, attrs, (opening, closing) = _SHAPES[kind]
        self.graph.node(node_id, graphviz.nohtml(label), shape=shape, **attrs)
        quoted = "<br/>".join(mermaid_escape(line) for line in text)
        self.mermaid.append(f'{self.indent}{node_id}{opening}"{quoted}"{closing}')
        return node_id

    def connect(self, ends: Ends, target: str, back: bool = False) -> None:
        for source, label in ends:
            attrs = {"label": label} if label else {}
            if back:
                attrs["constraint"] = "false"
                attrs["style"] = "dashed"
            self.dot.edge(source, target, **attrs)
            arrow = "-.->" if back else "-->"
            self.mermaid_edges.append(
                f"  {source} {arrow}" + (f'|"{mermaid_escape(label)}"| ' if label else " ") + target
            )

    def cluster(self, title: str) -> Any:
        self.count += 1
        return _Cluster(self, f"cluster_{self.count}", title)


class _Cluster:
    def __init__(self, chart: _Chart, name: str, title: str) -> None:
        self.chart, self.name, self.title = chart, name, title

    def __enter__(self) -> None:
        self.context = self.chart.dot.subgraph(name=self.name)
        self.graph = self.context.__enter__()
        self.graph.attr(
            label=graphviz.nohtml(dot_escape(self.title)), style="rounded", color="#999999", fontname="Helvetica"
        )
        self.chart.graph = self.graph
        self.chart.mermaid.append(f'  subgraph {self.name}["{mermaid_escape(self.title)}"]')
        self.chart.indent = "    "

    def __exit__(self, *exc: object) -> None:
        self.context.__exit__(*exc)  # type: ignore[arg-type]
        self.chart.graph = self.chart.dot
        self.chart.mermaid.append("  end")
        self.chart.indent = "  "


def flowchart(
    name: str,
    title: str,
    before: Sequence[Any],
    phases: Sequence[Any],
    loop_else: Sequence[Any],
    after: Sequence[Any],
    loop: str | None,
) -> Diagram:
    """The diagram of a flow body's outline (:mod:`rlmap.pages.sections.flow`)."""
    chart = _Chart(name)
    start = chart.node([title], START)
    ends: Ends = _sequence(chart, before, [(start, "")])
    if loop is not None:
        header = chart.node([loop], LOOP)
        chart.connect(ends, header)
        ends = [(header, "each iteration")]
        breaks: Ends = []
        continues: Ends = []
        chart.loops.append((breaks, continues))
        for phase in phases:
            with chart.cluster(phase.name):
                ends = _sequence(chart, phase.items, ends)
        chart.loops.pop()
        if ends or continues:
            again = chart.node(["next iteration"], NEXT)
            chart.connect(ends + continues, again)
            chart.connect([(again, "")], header, back=True)
        ends = [(header, "done")]
        if loop_else:
            ends = _sequence(chart, loop_else, ends)
        ends = ends + breaks  # a break skips the loop's else
    ends = _sequence(chart, after, ends)
    if ends:
        chart.connect(ends, chart.node(["end"], START))
    return Diagram(name=name, dot=chart.dot.source, mermaid="\n".join(chart.mermaid + chart.mermaid_edges) + "\n")


def _sequence(chart: _Chart, items: Sequence[Any], ends: Ends) -> Ends:
    run: list[str] = []
    tested: dict[int, int] = {}  # id of a choice or block -> the number of the call its test makes

    def flush(ends: Ends) -> Ends:
        if not run:
            return ends
        box = chart.node(list(run), STEP)
        run.clear()
        if ends:
            chart.connect(ends, box)
        return [(box, "")]

    for index, item in enumerate(items):
        if item.kind == "call":
            following = items[index + 1] if index + 1 < len(items) else None
            if following is not None and item.tests and _tested_by(item, following):
                tested[id(following)] = item.number
                continue  # drawn in the decision that tests it
            run.append(_call_line(item))
            continue
        if item.kind == "write":  # an assignment the flow shows: a line of the box being filled
            run.append(_call_line(item))
            continue
        if item.kind == "block" and not (item.text.startswith("if ") and _decides(item.items)):
            pass  # a block of calls joins the box being filled
        else:
            ends = flush(ends)
        if item.kind in ("exit", "jump"):
            ends = _exit(chart, item, ends, tested.get(id(item)))
        elif item.kind == "block" and item.text.startswith("if ") and _decides(item.items):
            decision = chart.node([_numbered(tested.get(id(item)), item.text[3:])], DECISION)
            chart.connect(ends, decision)
            ends = [*_sequence(chart, item.items, [(decision, "yes")]), (decision, "no")]
        elif item.kind == "block":
            run.append(item.text + ":")
            run.extend("   " + _call_line(inner, arm) for inner, arm in _calls(item.items))
            if any(inner.kind in ("exit", "jump") for inner in item.items):
                ends = flush(ends)
                _exits_of(chart, item, ends[0][0])
        elif item.kind == "choice":
            ends = _choice(chart, item, ends, tested.get(id(item)))
    return flush(ends)


def _exit(chart: _Chart, item: Any, ends: Ends, number: int | None = None) -> Ends:
    """An exit (a terminal) or a jump (on to where its loop goes on), under its condition."""
    if item.condition:
        decision = chart.node([_numbered(number, item.condition)], DECISION)
        chart.connect(ends, decision)
        _terminal(chart, item, [(decision, "yes")])
        return [(decision, "no")]
    _terminal(chart, item, ends)
    return []


def _terminal(chart: _Chart, item: Any, ends: Ends) -> None:
    if item.kind != "jump":
        chart.connect(ends, chart.node([item.text], EXIT))
        return
    node = chart.node([item.text], JUMP)
    chart.connect(ends, node)
    if chart.loops:  # the loop being drawn: a break joins its way out, a continue its next iteration
        breaks, continues = chart.loops[-1]
        (breaks if item.text.startswith("break") else continues).append((node, ""))


def _decides(items: Sequence[Any]) -> bool:
    """Whether a guarded block holds more than calls (an exit, a branch): then it is drawn as
    a decision; a block of calls is one box under its condition."""
    return any(item.kind in ("exit", "jump", "choice") or item.items for item in items)


def _choice(chart: _Chart, item: Any, ends: Ends, number: int | None = None) -> Ends:
    out: Ends = []
    current = ends
    arms = list(item.arms)
    while arms and not arms[-1].items:
        arms.pop()  # trailing branches that call nothing: the way on, drawn once
    for arm in arms:
        if arm.label == "else" or arm.label.startswith("case _"):
            out.extend(_sequence(chart, arm.items, current))
            current = []
            break
        condition = arm.label.partition(" ")[2]
        decision = chart.node([_numbered(number if arm is arms[0] else None, condition)], DECISION)
        chart.connect(current, decision)
        out.extend(_sequence(chart, arm.items, [(decision, "yes")]))
        current = [(decision, "no")]
    return out + current


def _tested_by(call: Any, following: Any) -> bool:
    """Whether ``following`` is a branch whose first test makes ``call`` (``if f(): ...``), or an
    exit or jump under that test (``if f(): return``)."""
    if following.kind == "choice":
        test = following.arms[0].label.partition(" ")[2]
    elif following.kind == "block" and following.text.startswith("if ") and _decides(following.items):
        test = following.text[3:]
    elif following.kind in ("exit", "jump"):
        test = following.condition
    else:
        return False
    return f"{call.text}(" in test


def _numbered(number: int | None, condition: str) -> str:
    return f"{number}. {condition} ?" if number else f"{condition} ?"


def _calls(items: Sequence[Any], arm: str = "") -> list[tuple[Any, str]]:
    """The calls (and the assignments the flow shows) of ``items``, nested ones too, in order,
    each with the branch of an alternative it is in (``if splits is not None``, ``else``; ``""``
    outside one): a box that holds a loop lists them on its lines, the branch said on each."""
    found = []
    for item in items:
        if item.kind in ("call", "write"):
            found.append((item, arm))
        found.extend(_calls(item.items, arm))
        for branch in item.arms:
            found.extend(_calls(branch.items, f"{arm}; {branch.label}" if arm else branch.label))
    return found


def _exits_of(chart: _Chart, block: Any, source: str) -> None:
    """Exits inside a block drawn as one box: terminals off the box (a nested loop's own
    ``break`` and ``continue`` stay inside its box)."""
    own_loop = block.text.startswith("each ")
    for item in block.items:
        if item.kind == "exit" or (item.kind == "jump" and not own_loop):
            _terminal(chart, item, [(source, item.condition)])


def _call_line(item: Any, arm: str = "") -> str:
    """A step's line in a box: ``3. self.env.step()``, an assignment as written; in a branch of
    an alternative drawn inside the box, that branch (``[else]``)."""
    text = item.text if item.kind == "write" else f"{item.number}. {item.text}()"
    text = f"{text} [{arm}]" if arm else text
    return f"{text} [if {item.condition}]" if item.condition else text


def _wrap(text: str) -> list[str]:
    text = CONTROL.sub(" ", text)
    return textwrap.wrap(text, _WIDTH, break_long_words=True, break_on_hyphens=False) or [""]
