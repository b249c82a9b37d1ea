"""The flow section: what a function does, read from its control flow.

The function's source is read into blocks (:mod:`rlmap.index.controlflow`); every call site of
the model is placed in the block that holds it.  The outline keeps the calls a reader follows
(on ``self``, into the package) with the branches as alternatives and the exits as exits; the
loop the profile names is cut into the profile's phases; calls on locals, tensors and builtins
are left to the complete list of every call.  For each configuration the profile declares, each
step is marked as running, skipped or depending on something the code does not fix
(:mod:`rlmap.pages.conditions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from rlmap.index import controlflow as cf
from rlmap.index.records import AUGMENTED, CLASS, METHOD, AttributeAccess
from rlmap.index.records import WRITE as WRITTEN
from rlmap.model.codemodel import ResolvedCall
from rlmap.model.target import CERTAIN
from rlmap.pages.callorder import evaluation_order
from rlmap.pages.conditions import joined, negated
from rlmap.pages.diagrams import Diagram
from rlmap.pages.flowchart import flowchart
from rlmap.pages.refs import Anchor, Ref
from rlmap.pages.sections import specs
from rlmap.pages.sections.base import (
    BUILTIN_NOISE,
    Body,
    Call,
    Context,
    method_family,
    overrides,
    primary,
    shown_guards,
)
from rlmap.pages.sections.jumps import Continuation, Destination, continuation, destination
from rlmap.pages.sections.runs import (
    DEPENDS,
    RUNS,
    SKIPPED,
    ConfigurationBody,
    FactRow,
    Runs,
    common_facts,
    fact_rows,
    header_test,
    preceding_operands,
    ternary_conditions,
)

CALL = "call"
EXIT = "exit"  # ``return`` / ``raise``: the function ends
JUMP = "jump"  # ``break`` / ``continue``: the function goes on, after the loop or at its head
CHOICE = "choice"  # exclusive branches: ``if``/``elif``/``else``, ``match``
BLOCK = "block"  # a nested loop or an exception handler: its steps, under its header
WRITE = "write"  # ``self.x = value``: an assignment of one of the flow's ``assignments``

__all__ = ["DEPENDS", "RUNS", "SKIPPED", "WRITE", "FlowBody", "Item", "build_flow"]


@dataclass(frozen=True, slots=True)
class Item:
    """One entry of the outline."""

    kind: str
    text: str = ""  # a call as written; an exit statement; a block's header
    anchor: Anchor | None = None
    targets: tuple[Ref | str, ...] = ()
    overrides: int = 0
    family: tuple[Ref, int] | None = None  # flow-found methods: their base's method, how many define it
    condition: str = ""  # what must also hold, inside its block, for it to run
    number: int = 0  # calls: the step's number in the outline
    tests: bool = False  # calls: made by the test of the ``if`` (or ``elif``) that holds it
    arms: tuple[Branch, ...] = ()  # choice
    items: tuple[Item, ...] = ()  # block
    status: tuple[str, ...] = ()  # per configuration: runs / skipped / depends
    goes_to: Destination | None = None  # jumps: where the function goes on


@dataclass(frozen=True, slots=True)
class Branch:
    label: str  # ``if c`` / ``elif c`` / ``else`` / ``case p``
    items: tuple[Item, ...]
    # a branch with no item: the calls written in it all the same (on local values, tensors),
    # which only the complete list shows
    unlisted: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Glance:
    """One token of a phase's one-line summary: a call (``conditional`` when a condition guards
    it), an exit, or the words around alternatives (``either`` / ``or`` / ``end``)."""

    kind: str
    text: str = ""
    conditional: bool = False


@dataclass(frozen=True, slots=True)
class PhaseBody:
    name: str
    anchor: Anchor | None  # its first statement
    items: tuple[Item, ...]

    @property
    def glance(self) -> tuple[Glance, ...]:
        tokens: list[Glance] = []
        for token in glance(self.items):
            if not (tokens and token.kind in (CALL, EXIT, JUMP, WRITE) and tokens[-1] == token):
                tokens.append(token)  # the same call twice in a row (two branches' cudagraph step) once
        return tuple(tokens)

    @property
    def numbers(self) -> str:
        """The span of step numbers the phase holds: ``6-15``."""
        found = [item.number for item in _flatten(self.items) if item.kind == CALL]
        if not found:
            return ""
        return f"{min(found)}-{max(found)}" if len(found) > 1 else str(found[0])


def glance(items: Sequence[Item], conditional: bool = False, nested: bool = False) -> list[Glance]:
    """The calls and exits of ``items`` in order; two or more branches that call something are
    shown as alternatives (at the top level of a phase), deeper branches as conditional steps."""
    out: list[Glance] = []
    for item in items:
        if item.kind == CALL:
            out.append(Glance(CALL, _short(item.text), conditional or bool(item.condition)))
        elif item.kind == WRITE:
            out.append(Glance(WRITE, _short(item.text), conditional or bool(item.condition)))
        elif item.kind in (EXIT, JUMP):
            out.append(Glance(item.kind, item.text.split(" ", 1)[0], conditional or bool(item.condition)))
        elif item.kind == BLOCK:
            out.extend(glance(item.items, True, nested))
        elif item.kind == CHOICE:
            arms = [arm for arm in item.arms if arm.items]
            if conditional or nested or len(arms) < 2:
                for arm in arms:
                    out.extend(glance(arm.items, True, nested))
                continue
            out.append(Glance("either"))
            for index, arm in enumerate(arms):
                if index:
                    out.append(Glance("or"))
                out.extend(glance(arm.items, False, True))
            out.append(Glance("end"))
    return out


def _flatten(items: Sequence[Item]) -> list[Item]:
    found = []
    for item in items:
        found.append(item)
        found.extend(_flatten(item.items))
        for arm in item.arms:
            found.extend(_flatten(arm.items))
    return found


def _short(callee: str) -> str:
    return callee[len("self.") :] if callee.startswith("self.") else callee


@dataclass(frozen=True, slots=True)
class FlowBody(Body):
    function: Ref
    loop: str | None
    loop_anchor: Anchor | None
    wrappers: tuple[str, ...]  # the ``with`` headers around the loop
    before: tuple[Item, ...]  # the whole body when there is no loop
    phases: tuple[PhaseBody, ...]
    loop_else: tuple[Item, ...]  # the loop's ``else``: when it ends without ``break``
    after: tuple[Item, ...]
    configurations: tuple[ConfigurationBody, ...]
    facts: tuple[FactRow, ...]  # what each configuration gives, and what follows from the code
    common: tuple[tuple[str, str], ...]  # the facts every configuration gives alike
    steps: tuple[Item, ...]  # every numbered call and every exit, in code order
    calls: tuple[Call, ...]  # every call, in code order (the appendix)
    assignments: tuple[Ref, ...] = ()  # the attributes whose assignments the outline shows
    overridden: tuple[Overriding, ...] = ()  # the subclasses' own definitions of the method
    more_overriding: int = 0  # how many more there are than are listed


@dataclass(frozen=True, slots=True)
class Overriding:
    """A subclass's own definition of the method a flow describes: an instance of that subclass
    runs it in the described method's place."""

    ref: Ref
    calls_it: bool  # it calls the method it overrides (``super().step(...)``): found by name, certain
    # the conditions it calls it under, " / "-joined, when every call of it is guarded
    # (``ParallelEnv.step_and_maybe_reset``: ``not self._use_buffers``); "" when one is not
    only_if: str = ""


OVERRIDING_SHOWN = 8  # the subclasses' definitions a flow section lists (the others are counted)


def build_flow(spec: specs.Flow, ctx: Context) -> FlowBody:
    cls = ctx.name(spec.class_, "class") if spec.class_ else None
    function = ctx.member(cls, spec.function, "function")
    owner = cls or (function.rpartition(".")[0] if ctx.model.node_kind(function.rpartition(".")[0]) == "class" else "")
    symbol = ctx.model.symbol(function)
    if symbol is None:
        raise ctx.fail(f"function: '{function}' is not a function")
    lines = ctx.refs.source_lines(symbol.path)[symbol.line - 1 : symbol.end_line]
    source = "\n".join(lines) + "\n"
    try:
        flow = ctx.refs.flows.of(source, symbol.line)
    except cf.FlowError as error:
        raise ctx.fail(f"function: {function}: {error}", "check that the source matches the index") from None
    sites = evaluation_order(ctx.model.call_sites(function), source, symbol.line)
    builder = _Builder(spec, ctx, function, owner, flow, sites)
    return builder.build()


class _Builder:
    def __init__(
        self,
        spec: specs.Flow,
        ctx: Context,
        function: str,
        owner: str,
        flow: cf.FunctionFlow,
        sites: Sequence[ResolvedCall],
    ) -> None:
        self.spec, self.ctx, self.function, self.owner, self.flow = spec, ctx, function, owner, flow
        self.sites = list(sites)  # in the order the calls are made
        self.placed: dict[tuple[int, int], list[ResolvedCall]] = {}
        self.paths: dict[int, tuple[cf.Step, ...]] = {}
        for site in self.sites:
            path = _in_branch(cf.locate(flow.body, site.line), site.line, f"{site.callee_text}(")
            if not path:
                continue
            self.paths[id(site)] = path
            self.placed.setdefault(_holder(path), []).append(site)
        # the assignments the outline shows, where they are made (as the call sites)
        self.writes: dict[tuple[int, int], list[AttributeAccess]] = {}
        self.assigned: list[str] = []
        for name in spec.assignments:
            attribute = ctx.attribute(owner or None, name, "assignments")
            self.assigned.append(attribute)
            written = [
                access
                for access in ctx.model.attribute_accesses(attribute)
                if access.function == function and access.kind in (WRITTEN, AUGMENTED)
            ]
            if not written:
                raise ctx.fail(
                    f"assignments: {attribute} is assigned nowhere in {function}",
                    "the code moved: take it out of assignments",
                )
            for access in written:
                path = _in_branch(cf.locate(flow.body, access.line), access.line)
                if path:
                    self.writes.setdefault(_holder(path), []).append(access)
        self.runs = Runs(spec.configurations, ctx, owner, flow)
        self.numbered: list[Item] = []  # the calls, by number
        self.rows: list[Item] = []  # the calls and the exits, in code order
        self.loop_node: cf.Node | None = None
        self.loop_path: tuple[cf.Step, ...] = ()
        self.jumps: dict[int, Continuation] = {}  # the line of a break/continue -> where it goes on

    # -- the outline -------------------------------------------------------------------------
    def build(self) -> FlowBody:
        spec, ctx = self.spec, self.ctx
        before: list[Item] = []
        phases: list[PhaseBody] = []
        loop_else: list[Item] = []
        after: list[Item] = []
        wrappers: list[str] = []
        loop_anchor = None
        if spec.loop:
            self.loop_path = self._find_loop(spec.loop)
            self.loop_node = loop = self.runs.loop = self.loop_path[-1].node
            loop_anchor = ctx.anchor(self.function, loop.text.split()[0], loop.line)
            outer = self.loop_path[0].node
            index = next(i for i, node in enumerate(self.flow.body) if node is outer)
            before = self.items(self.flow.body[:index])
            for step in self.loop_path[:-1]:
                before.extend(self.header_items(step.node))
                wrappers.append(step.node.text)
            phases = self.phases(loop.arms[0].body)
            if len(loop.arms) > 1:
                loop_else = self.items(loop.arms[1].body)
            after = self.after_loop(index)
        else:
            before = self.items(self.flow.body)
        before, loop_else, after = (self.resolve_jumps(items) for items in (before, loop_else, after))
        phases = [replace(phase, items=tuple(self.resolve_jumps(phase.items))) for phase in phases]
        configurations = self.runs.configurations(self.rows)
        calls = tuple(self.every_call()) if spec.every_call else ()
        diagrams: tuple[Diagram, ...] = ()
        if spec.diagram:
            diagrams = (
                flowchart(
                    spec.diagram, ctx.refs.ref(self.function).display, before, phases, loop_else, after, spec.loop
                ),
            )
        overriding = self.overriding()
        return FlowBody(
            function=ctx.ref(self.function),
            loop=spec.loop,
            loop_anchor=loop_anchor,
            wrappers=tuple(wrappers),
            before=tuple(before),
            phases=tuple(phases),
            loop_else=tuple(loop_else),
            after=tuple(after),
            configurations=configurations,
            facts=fact_rows(configurations),
            common=common_facts(configurations),
            steps=tuple(self.rows),
            calls=calls,
            diagrams=diagrams,
            assignments=tuple(ctx.ref(attribute) for attribute in self.assigned),
            overridden=tuple(overriding[:OVERRIDING_SHOWN]),
            more_overriding=max(0, len(overriding) - OVERRIDING_SHOWN),
        )

    def overriding(self) -> list[Overriding]:
        """The definitions of the method in the subclasses of its class, in name order."""
        if not self.owner or self.ctx.model.node_kind(self.owner) != CLASS:
            return []
        name = self.function.rpartition(".")[2]
        found = []
        for sub in self.ctx.model.subclasses_of(self.owner):
            symbol = self.ctx.model.symbol(f"{sub}.{name}")
            if symbol is None or symbol.kind != METHOD or symbol.qualname == self.function:
                continue
            edge = self.ctx.model.edge(symbol.qualname, self.function)
            calls_it = edge is not None and bool(set(edge.how) & CERTAIN)
            sites = self.ctx.model.call_sites(symbol.qualname)
            guards = [site.guards for site in sites if self.function in site.targets]
            only_if = (
                shown_guards(guards[0]) if calls_it and guards and all(each == guards[0] for each in guards) else ""
            )
            found.append(Overriding(self.ctx.ref(symbol.qualname), calls_it, only_if))
        return found

    def _find_loop(self, header: str) -> tuple[cf.Step, ...]:
        wanted = cf.one_line(header)
        found: list[tuple[cf.Step, ...]] = []

        def visit(nodes: Sequence[cf.Node], path: tuple[cf.Step, ...]) -> None:
            for node in nodes:
                if node.kind == cf.LOOP and node.text == wanted:
                    found.append((*path, cf.Step(node, 0)))
                for index, arm in enumerate(node.arms):
                    visit(arm.body, (*path, cf.Step(node, index)))

        visit(self.flow.body, ())
        if not found:
            loops = []

            def collect(nodes: Sequence[cf.Node]) -> None:
                for node in nodes:
                    if node.kind == cf.LOOP:
                        loops.append(node.text)
                    for arm in node.arms:
                        collect(arm.body)

            collect(self.flow.body)
            hint = f"its loops: {'; '.join(loops)}" if loops else "the function has no loop now: remove 'loop'"
            raise self.ctx.fail(f"loop '{header}' is not a loop of {self.function}", hint)
        return found[0]

    def after_loop(self, index: int) -> list[Item]:
        """The statements after the loop: in the blocks around it, then in the function."""
        items: list[Item] = []
        for depth in range(len(self.loop_path) - 1, 0, -1):
            step = self.loop_path[depth - 1]
            block = step.node.arms[step.arm or 0].body
            inner = self.loop_path[depth].node
            position = next(i for i, node in enumerate(block) if node is inner)
            items.extend(self.items(block[position + 1 :]))
        items.extend(self.items(self.flow.body[index + 1 :]))
        return items

    def phases(self, body: Sequence[cf.Node]) -> list[PhaseBody]:
        spec, ctx = self.spec, self.ctx
        if not spec.phases:
            return [PhaseBody("Each iteration", None, tuple(self.items(body)))]
        cls = self.owner or None
        starts: list[int] = []
        for number, phase in enumerate(spec.phases, 1):
            where = f"phases[{number}] ({phase.name})"
            starts_at = ctx.member(cls, phase.starts_at or phase.anchor, f"{where} starts_at")
            first = starts[-1] + 1 if starts else 0
            found = next((i for i in range(first, len(body)) if self.uses(body[i], starts_at)), None)
            if found is None:
                raise ctx.fail(
                    f"{where}: no statement of the loop after the previous phase calls or touches {starts_at}",
                    "the code moved: anchor the phase on a symbol its first statement uses",
                )
            starts.append(0 if number == 1 else found)
        built = []
        for number, (phase, start) in enumerate(zip(spec.phases, starts, strict=True), 1):
            end = starts[number] if number < len(starts) else len(body)
            statements = body[start:end]
            anchor = ctx.member(cls, phase.anchor, f"phases[{number}] ({phase.name}) anchor")
            if not any(self.uses(node, anchor) for node in statements):
                raise ctx.fail(
                    f"phases[{number}] ({phase.name}): {anchor} is neither called nor accessed in the phase",
                    "the code moved: anchor the phase on a symbol it uses",
                )
            opening = statements[0]
            built.append(
                PhaseBody(phase.name, ctx.anchor(self.function, "", opening.line), tuple(self.items(statements)))
            )
        return built

    def uses(self, node: cf.Node, qualname: str) -> bool:
        for site in self.sites:
            if node.line <= site.line <= node.end_line and qualname in site.targets:
                return True
        return any(
            access.function == self.function and node.line <= access.line <= node.end_line
            for access in self.ctx.model.attribute_accesses(qualname)
        )

    def items(self, nodes: Sequence[cf.Node]) -> list[Item]:
        out: list[Item] = []
        for node in nodes:
            out.extend(self.header_items(node))
            if node.kind in (cf.BREAK, cf.CONTINUE):
                out.append(self.jump_item(node))
            elif node.kind in cf.EXITS:
                out.append(self.exit_item(node))
            elif node.kind in (cf.IF, cf.MATCH):
                out.extend(self.choice(node))
            elif node.kind == cf.LOOP:
                out.extend(self.block(f"each {node.text}", self.items(node.arms[0].body)))
                if len(node.arms) > 1:
                    out.extend(self.block(f"when `{node.text}` ends without break", self.items(node.arms[1].body)))
            elif node.kind == cf.TRY:
                for index, arm in enumerate(node.arms):
                    inner = self.arm_items(node, index)
                    if arm.role == cf.EXCEPT:
                        out.extend(self.block(f"on exception {arm.condition}".rstrip(), inner))
                    elif arm.role == cf.ELSE:
                        out.extend(self.block("if no exception", inner))
                    else:
                        out.extend(inner)
            elif node.kind == cf.WITH:
                out.extend(self.items(node.arms[0].body))
        return out

    def header_items(self, node: cf.Node) -> list[Item]:
        """The calls a statement (or a block's header) makes, then the assignments it makes of the
        flow's ``assignments`` (a value is stored once computed)."""
        calls = [self.call_item(site) for site in self.placed.get((id(node), -1), ()) if self.significant(site)]
        return calls + [self.write_item(access) for access in self.writes.get((id(node), -1), ())]

    def write_item(self, access: AttributeAccess) -> Item:
        """``self.x = value``; ``self.x`` augmented (``+=``: the index keeps the value, not the
        operator); ``self.x`` assigned, where no one expression is its value (unpacked, a loop's target)."""
        target = f"self.{access.attribute}"
        if access.kind == AUGMENTED:
            text = f"{target} augmented by {access.value}" if access.value else f"{target} augmented"
        else:
            text = f"{target} = {access.value}" if access.value else f"{target} assigned"
        return Item(WRITE, text=text, anchor=self.ctx.anchor(self.function, access.attribute, access.line))

    def arm_items(self, node: cf.Node, index: int) -> list[Item]:
        header = [self.call_item(site) for site in self.placed.get((id(node), index), ()) if self.significant(site)]
        return header + self.items(node.arms[index].body)

    def choice(self, node: cf.Node) -> list[Item]:
        branches = []
        for index, arm in enumerate(node.arms):
            label = {cf.THEN: "if", cf.ELIF: "elif", cf.CASE: "case"}.get(arm.role, "else")
            text = f"{label} {arm.condition}" if arm.condition else label
            items = tuple(self.arm_items(node, index))
            unlisted = () if items else tuple(dict.fromkeys(self.calls_in((node,), index)))
            branches.append(Branch(text, items, unlisted))
        filled = [branch for branch in branches if branch.items]
        if not filled:
            return []
        # another branch that makes calls the outline leaves to the complete list (``if not
        # self.batch_locked: tensordict = tensordict[partial_steps.view(...)]``) is an alternative
        # still: folded into one condition, the outline would hide what that branch does instead
        if len(filled) > 1 or any(branch.unlisted for branch in branches):
            anchor = self.ctx.anchor(self.function, "if", node.line)
            return [Item(CHOICE, text=node.text, arms=tuple(branches), anchor=anchor)]
        # one branch does something: its condition, on its calls
        condition = _arm_condition(node, branches.index(filled[0]))
        items = filled[0].items
        if len(items) == 1 and items[0].kind in (CALL, EXIT, JUMP, BLOCK, WRITE):
            return [self.conditioned(items[0], condition)]
        return [Item(BLOCK, text=f"if {condition}", items=items)]

    def calls_in(self, nodes: Sequence[cf.Node], arm: int | None = None) -> list[str]:
        """The calls the complete list has (Python's builtins left out) written in ``nodes``, in
        code order, headers and bodies; with ``arm``, those of that arm of the one node only."""
        found: list[str] = []
        for node in nodes:
            arms = range(len(node.arms)) if arm is None else (arm,)
            keys = [(id(node), index) for index in arms]
            if arm is None:
                keys.insert(0, (id(node), -1))
            for key in keys:
                found.extend(site.callee_text for site in self.placed.get(key, ()) if not _builtin_only(site))
            for index in arms:
                found.extend(self.calls_in(node.arms[index].body))
        return found

    def conditioned(self, item: Item, condition: str) -> Item:
        """``item`` under one more condition (a block's header grows: ``if a and b``)."""
        if item.kind == BLOCK:
            if item.text.startswith("if "):
                return replace(item, text="if " + joined(condition, item.text[3:]))
            return Item(BLOCK, text=f"if {condition}", items=(item,))
        flattened = replace(item, condition=joined(condition, item.condition))
        if item.kind == CALL:
            self.numbered[item.number - 1] = flattened
        if item.kind != WRITE:  # (an assignment is no numbered step, nor an exit: not a row)
            self.rows[next(i for i, row in enumerate(self.rows) if row is item)] = flattened
        return flattened

    def block(self, header: str, items: list[Item]) -> list[Item]:
        return [Item(BLOCK, text=header, items=tuple(items))] if items else []

    def call_item(self, site: ResolvedCall) -> Item:
        targets = [t for t in primary(site.targets, site.how) if not t.startswith(BUILTIN_NOISE)]
        hows = tuple(h for t, h in zip(site.targets, site.how, strict=False) if t in targets)
        family = method_family(self.ctx.model, tuple(targets), hows)
        item = Item(
            CALL,
            text=site.callee_text,
            anchor=self.ctx.anchor(self.function, site.callee_text.rsplit(".", 1)[-1], site.line),
            targets=self.ctx.targets(targets, site),
            overrides=overrides(site.how),
            family=(self.ctx.ref(family[0]), family[1]) if family else None,
            condition=self.short_circuit(site),
            number=len(self.numbered) + 1,
            tests=_in_if_test(self.site_path(site)),
            status=self.runs.status(self.site_path(site), site),
        )
        self.numbered.append(item)
        self.rows.append(item)
        return item

    def exit_item(self, node: cf.Node) -> Item:
        path = cf.locate(self.flow.body, node.line)
        item = Item(
            EXIT,
            text=node.text,
            anchor=self.ctx.anchor(self.function, node.kind, node.line),
            status=self.runs.status(path, None),
        )
        self.rows.append(item)
        return item

    def jump_item(self, node: cf.Node) -> Item:
        """A ``break`` or ``continue``: where it goes on is filled in once every step is numbered."""
        item = Item(
            JUMP,
            text=node.text,
            anchor=self.ctx.anchor(self.function, node.kind, node.line),
            status=self.runs.status(cf.locate(self.flow.body, node.line), None),
        )
        self.jumps[node.line] = continuation(self.flow.body, node)
        self.rows.append(item)
        return item

    def resolve_jumps(self, items: Sequence[Item]) -> list[Item]:
        """``items`` with each jump's destination: the first step of the statement it goes on at
        (or that statement, when it calls nothing the outline numbers), or the loop's head."""
        out = []
        for item in items:
            resolved = item
            if item.kind == JUMP and item.anchor is not None and item.anchor.line in self.jumps:
                resolved = self.destination(item, self.jumps[item.anchor.line])
            elif item.items or item.arms:
                arms = tuple(Branch(arm.label, tuple(self.resolve_jumps(arm.items)), arm.unlisted) for arm in item.arms)
                resolved = replace(item, items=tuple(self.resolve_jumps(item.items)), arms=arms)
            out.append(resolved)
        return out

    def destination(self, item: Item, where: Continuation) -> Item:
        def anchor(word: str, line: int) -> Anchor | None:
            return self.ctx.anchor(self.function, word, line)

        rows = [row for row in self.rows if row is not item]
        return replace(item, goes_to=destination(item.text, where, rows, anchor))

    def significant(self, site: ResolvedCall) -> bool:
        """A call a reader follows: on the object itself (``self.x.f()``), into the documented
        code, or of a callable held in a local name; not plumbing (a method of a local value that
        leads out of the code, what another call returned, builtins, or a target under one of the
        ``plumbing`` prefixes)."""
        if "(...)" in site.callee_text:
            return False
        if site.callee_text.split(".", 1)[0] in ("self", "cls"):
            return True
        resolved = [t for t in site.targets if not t.startswith("?:")]
        plumbing = tuple(self.spec.plumbing)
        if any(self.ctx.model.has_symbol(t) and not t.startswith(plumbing) for t in resolved):
            return True
        return not resolved and "." not in site.callee_text

    def site_path(self, site: ResolvedCall) -> tuple[cf.Step, ...]:
        return self.paths.get(id(site), ())

    def short_circuit(self, site: ResolvedCall) -> str:
        """``a and f()``: the call runs only when ``a`` holds (``or``: when it fails)."""
        path = self.site_path(site)
        if not path or path[-1].arm is not None:
            return ""
        test = header_test(path)
        operands = preceding_operands(test, site.callee_text) if test else []
        # ``f() if c else g()``: the arm of a conditional expression that holds the call
        operands += ternary_conditions(path[-1].node.text, site.callee_text)
        return " and ".join(operands)

    def every_call(self) -> list[Call]:
        """Every call in code order with the conditions of the blocks that hold it, outermost
        first (the documented loop's header left out): an inner block's condition alone would
        read as the only one (``_sync_policy`` runs under ``not self.no_cuda_sync`` only inside
        the branches that cast to the policy's device)."""
        loop_guard = self.loop_node.text if self.loop_node is not None else None
        rows: list[Call] = []
        for site in self.sites:
            if _builtin_only(site):
                continue
            rows.append(
                Call(
                    number=len(rows) + 1,
                    anchor=self.ctx.anchor(self.function, site.callee_text.rsplit(".", 1)[-1], site.line),
                    text=site.callee_text,
                    targets=self.ctx.targets(primary(site.targets, site.how), site),
                    overrides=overrides(site.how),
                    guard=shown_guards([guard for guard in site.guards if guard != loop_guard]),
                )
            )
        return rows


def _builtin_only(site: ResolvedCall) -> bool:
    """A call of Python's builtins only (``isinstance``, ``len``): in neither list of calls."""
    return bool(site.targets) and all(target.startswith(BUILTIN_NOISE) for target in site.targets)


def _in_branch(path: tuple[cf.Step, ...], line: int, written: str = "") -> tuple[cf.Step, ...]:
    """The path of a step on the line of an ``if``/``elif`` test whose branch is on that line
    too (``if c: self.x = v``, ``elif d: f()``): its branch's statement, unless the test holds it
    (``written``, a call as written, ``f(``, is in the test; an assignment to an attribute never is)."""
    if not path:
        return path
    last = path[-1]
    if last.node.kind == cf.IF and last.arm is None and last.node.arms:  # ``if c: ...`` on one line
        node, index = last.node, 0
        head = path[:-1]
    elif len(path) > 1 and path[-2].node.kind == cf.IF and path[-2].arm is not None and last.node.kind == cf.STATEMENT:
        node, index = path[-2].node, path[-2].arm  # ``elif c: ...`` on one line: the arm's header
        head = path[:-2]
        if last.node.text != node.arms[index].condition:
            return path
    else:
        return path
    if written and written in node.arms[index].condition:
        return path  # (made by the test)
    inner = cf.locate(node.arms[index].body, line)
    return (*head, cf.Step(node, index), *inner) if inner else path


def _holder(path: tuple[cf.Step, ...]) -> tuple[int, int]:
    """Where a placed line sits: a statement (or a compound statement's header), or an arm's header."""
    last = path[-1]
    if len(path) > 1:
        parent, arm = path[-2].node, path[-2].arm
        in_header = arm is not None and last.node.kind == cf.STATEMENT and last.node.text == parent.arms[arm].condition
        if in_header and parent.arms[arm].role in (cf.ELIF, cf.EXCEPT, cf.CASE):  # type: ignore[index]
            return (id(parent), arm)  # type: ignore[return-value]
    return (id(last.node), -1)


def _in_if_test(path: tuple[cf.Step, ...]) -> bool:
    """Whether a located call is in the test of an ``if`` or ``elif``."""
    if not path:
        return False
    if path[-1].node.kind == cf.IF and path[-1].arm is None:
        return True
    parent = path[-2] if len(path) > 1 else None
    return (
        parent is not None
        and parent.node.kind == cf.IF
        and parent.arm is not None
        and parent.node.arms[parent.arm].role == cf.ELIF
        and path[-1].node.text == parent.node.arms[parent.arm].condition
    )


def _arm_condition(node: cf.Node, index: int) -> str:
    """What must hold to take arm ``index`` of an ``if``: the earlier tests failed, its own holds."""
    parts = [negated(node.arms[i].condition) for i in range(index)]
    if node.arms[index].condition and node.arms[index].role != cf.ELSE:
        parts.append(node.arms[index].condition)
    return joined(*parts)
