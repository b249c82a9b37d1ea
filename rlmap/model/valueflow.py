"""Whole-program value flow: the modules' summaries solved once, discovering call edges as it goes.

Flow-insensitive and field-based (an attribute of every instance of ``C`` is one variable
``C.name``; a container's elements are ``<id>[]``, by constant key ``<id>['a']``).  The
abstract values:

============  =======================================================================
value         what it stands for
============  =======================================================================
fn:Q          the function (or lambda) ``Q``
cls:C         the class ``C``
i:C           an instance of ``C``
b:R|Q         method ``Q`` bound to receiver ``R`` (an ``i:`` or ``cls:`` value)
mod:M         the module ``M``
new:ID        a container (list, tuple, dict, set, generator, ``*args``) made at ``ID`` (a
              literal's or comprehension's position, numbered in its module: ``M:N``)
cm:ID|m       the method ``m`` of container ``ID`` (``d.get``, ``l.append``)
super:C|R     ``super()`` in a method of ``C``, for receiver ``R``
attrs:C       ``obj.__dict__`` of an instance of ``C`` (its keys are attributes)
ext:X         the object named ``X`` outside the source (``builtins.map``, ``torch.cat``)
make:C        ``super().__call__`` in a metaclass's ``__call__`` making ``C``: calling it runs
              ``C.__init__`` (``type.__call__``)
apply:C       ``C.apply`` of a ``torch.autograd.Function`` subclass ``C``: calling it runs
              ``C.forward`` (with a context autograd makes: the arguments are not bound)
============  =======================================================================

A worklist propagates each variable's new values along copy edges and through the facts that
read it (attribute and element loads and stores, calls); a call reached by a function value
binds its arguments to the parameters and its result to the function's return, which is how
values flow between functions.  Call edges are recorded per call site
(``(caller, line, callee text)``) with how they were found:

============  =======================================================================
flow          a function, class or bound method that reaches the called expression, or a
              function outside the source (``ext:``) that does where the site does not name it
              (``sync = torch.cuda.synchronize; sync()``: a site naming it resolves by name)
callback      a function passed to a builtin or library that calls it (``map``,
              ``sorted(key=)``, ``threading.Thread(target=)``, ``threading.Timer``,
              ``atexit.register``)
implicit      a method Python calls by itself (``__enter__``, ``__iter__``, ``__call__``,
              ``forward`` of a ``torch.nn.Module`` called, or of a ``torch.autograd.Function``
              whose ``apply`` is called; a metaclass's ``__call__`` when its
              class is constructed, and the class's ``__init__`` from its ``super().__call__``)
setter        a property setter run by an attribute store
decorator     a decorator applied to a definition
============  =======================================================================

What keeps merged calls apart (each rule has a synthetic case in
``tests/model/test_valueflow_precision.py``): a parameter returned as is gives each call its own
argument (:meth:`ValueFlow._returned_parameters`); an annotated parameter holds only instances
of its classes (:mod:`rlmap.model.annotations`); ``**d``/``*xs`` bind by name and by position;
``__getattr__`` answers only where no object the receiver may hold has the attribute
(:meth:`ValueFlow.targets`); a container is never its own element (``x = [x for ...]`` would
otherwise put the list among its own elements, and a store into an element into the list); and
:mod:`rlmap.model.admission` drops the callees a site's own receiver type or ``isinstance``
guard contradicts.

Nothing is imported or run.  Sets are capped (``cap`` values per variable: a profile's
``value_cap``, else :data:`rlmap.model.pointsto.CAP`) so that a variable that may hold anything
does not make the solve quadratic: a variable at the cap keeps the first values that reached it (of
those arriving together, the smallest in sort order) and drops the rest, and what it dropped flows
nowhere.  Which values those are depends on the order the solver meets them, and that order is
fixed by the input alone: modules in path order, facts in source order, the worklist taking the
variable queued last first, every set walked sorted (the graph and its solve are
:mod:`rlmap.model.pointsto`).  So the result is the same whatever the hash seed, the working
directory or the number of parser processes; where no variable drops a value, the cap decided
nothing.  :meth:`PointsTo.over_cap` counts the variables that dropped one, the
model keeps that count, and a command that loads such a model says so.  On torchrl 0.14.1 with
tensordict, the largest set holds 320 values: under the built-in profile's cap (1,024) no
variable drops one, and solving the modules in reverse path order gives every variable the same
values and every site the same targets (``tests/model/test_value_cap.py``).  Under the default
cap of 64, 168 of the 102,888 variables that hold a value drop one, and the reverse order changes
22 of the 26,525 (site, callee) pairs of :meth:`ValueFlow.targets`, counted on either side.  A
truncated set is never a proof that a call does not happen.
"""

from __future__ import annotations

import builtins
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from sys import intern
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from rlmap.index.records import (
    ATTRIBUTE,
    CLASS,
    FUNCTION,
    METHOD,
    MODULE,
    PROPERTY,
    VARIABLE,
    Flow,
    FlowRow,
    ModuleIndex,
)
from rlmap.index.summaries import METACLASS
from rlmap.model.annotations import CONTAINER, Declared, declared_types
from rlmap.model.mro import first_in_mro
from rlmap.model.pointsto import CAP, PointsTo
from rlmap.model.target import Target

if TYPE_CHECKING:
    from rlmap.model.resolve import Resolver

# A fact's fields: the facts are the index's rows themselves (no object is made per row; a
# fact the solve makes is a :class:`Flow`, a row with names), read by position.
OP: Final = 0
TARGET: Final = 1
SOURCE: Final = 2
NAME: Final = 3
ARGS: Final = 4
LINE: Final = 5
SCOPE: Final = 6
RETURN = "<return>"
OWN = "<own>"  # a returned parameter: what the function itself assigns to it
DEFAULT = "<default>"  # a returned parameter: its default value
_AUTOGRAD_FUNCTION = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
_BUILTINS = frozenset(dir(builtins))
_TYPE_BASES = frozenset({"type", "builtins.type", "ABCMeta", "EnumMeta", "enum.EnumMeta"})
_FUNCTION_KINDS = frozenset({FUNCTION, METHOD, PROPERTY})
SiteKey = tuple[str, int, str]  # caller, line, callee text
_WATCHED_SOURCE = frozenset({"load", "elem_load", "call"})  # the facts that read their source
_UNREAD: dict[str, str] = {}  # the arguments of a call no one asks for again (never changed)
# What a load does for one value (see ValueFlow._load_plan); _OTHER: the load of a value that is
# neither an instance nor a class, done in full each time
_LoadPlan = tuple[tuple[str, ...] | None, bool, bool, str, tuple[int, ...]]
_OTHER: _LoadPlan = (None, False, False, "", ())
_NONE: _LoadPlan = ((), False, False, "", ())  # a load that gives nothing


# Library functions that call a function they are given: the argument holding the function, and
# the one whose elements it is called with.
_CALLBACKS: dict[str, tuple[str, str]] = {
    "builtins.map": ("0", "1"),
    "builtins.filter": ("0", "1"),
    "builtins.sorted": ("key", "0"),
    "builtins.min": ("key", "0"),
    "builtins.max": ("key", "0"),
    "functools.reduce": ("0", "1"),
    "threading.Thread": ("target", "args"),
    "multiprocessing.Process": ("target", "args"),
    "torch.multiprocessing.Process": ("target", "args"),
    "atexit.register": ("0", ""),
    "threading.Timer": ("1", ""),
    "weakref.finalize": ("1", ""),
    "signal.signal": ("1", ""),
}
# Builtins whose result holds the elements of their first argument (a copy of the container).
_PASS_CONTAINER = frozenset(
    {
        "torch.nn.ModuleList",
        "torch.nn.ModuleDict",
        "torch.nn.Sequential",
        "torch.nn.modules.container.ModuleList",
        "torch.nn.modules.container.ModuleDict",
        "collections.deque",
        "collections.OrderedDict",
        "builtins.dict",
        "builtins.list",
        "builtins.tuple",
        "builtins.set",
        "builtins.frozenset",
        "builtins.iter",
        "builtins.reversed",
        "builtins.sorted",
        "copy.copy",
        "copy.deepcopy",
    }
)
_ELEMENT_OF_FIRST = frozenset({"builtins.next", "builtins.min", "builtins.max"})
_CONTAINER_READS = frozenset({"get", "pop", "popitem", "setdefault", "__getitem__", "popleft"})
_CONTAINER_SAME = frozenset({"values", "copy", "keys", "__iter__"})
_CONTAINER_WRITES = frozenset({"append", "add", "insert", "appendleft"})
_CONTAINER_EXTENDS = frozenset({"extend", "update"})


class ValueFlow(PointsTo):
    """The points-to sets of every variable, and the call edges they imply."""

    def __init__(
        self,
        resolver: Resolver,
        modules: Iterable[ModuleIndex],
        library: tuple[str, ...] = (),
        cap: int = CAP,
        rows: list[FlowRow] | None = None,
    ) -> None:
        """``library``: the companion packages, whose definitions are known but whose bodies are
        not part of the flow (``modules`` leaves them out); ``cap``: the values a variable keeps.
        ``rows``: the facts of ``modules``
        handed over by a caller that lets them go (:func:`rlmap.model.assemble.take_rows`): the
        list is emptied once read, so that the solve holds only the facts it watches."""
        self.resolver = resolver
        self.symbols = resolver.symbols
        self.library = tuple(name + "." for name in library)
        # Ordered sets (dicts), never ``set``: which values a capped variable keeps must not depend
        # on the hash seed (the output is byte-identical whatever it is).
        super().__init__(cap)
        self.params: dict[str, tuple[str, ...]] = {}
        # site -> callee -> how; a site's one callee as the pair (callee, how) (most sites: a dict
        # of one is three times the size)
        self.edges: dict[SiteKey, tuple[str, str] | dict[str, str]] = {}
        self.decorated: list[FlowRow] = []
        self.hows: dict[int, str] = {}  # id of a synthetic call fact -> how its edges are labelled
        self._subclass_memo: dict[str, dict[str, bool | None]] = {}
        self._fits_memo: dict[Declared, dict[str, bool]] = {}
        # ``__getattr__`` answering a load: the load's result -> the variable of what it returned;
        # the results of loads that found the member on some value; each site's receiver variable
        self.via_getattr: dict[str, str] = {}
        self.member_found: set[str] = set()
        self.by_getattr: set[tuple[SiteKey, str]] = set()  # edges found only through ``__getattr__``
        self.site_source: dict[SiteKey, str] = {}
        self._through_getattr = False
        self._unpacked: set[tuple[str, str, str]] = set()  # (source, target, key) of ``*xs``/``**d`` bound
        self._paths: dict[tuple[str, str], tuple[tuple[str, ...], str, bool]] = {}
        self._keep: list[Flow] = []
        # id of a watcher of a class's metaclass -> (the constructor call, the class it makes)
        self._metacalls: dict[int, tuple[FlowRow, str]] = {}
        self._metaclass_watched: set[int] = set()  # (id of a constructor call, class): see _pair
        facts = rows if rows is not None else [row for module in modules for row in module.flow]
        self._metaclass_variables: dict[str, str | None] = {}  # first_in_mro's memo
        self._metaclass_memo: dict[str, bool | None] = {}
        self.decorations: dict[str, list[tuple[str, str]]] = defaultdict(list)  # result -> (target, original)
        self.hooked = self.decorations  # :meth:`visited` is asked about these variables only
        self.receivers: dict[str, str] = {}  # a method's ``self`` variable -> its class
        # the classes that declare a ``metaclass=`` (its variable is ``C.<metaclass>``), the
        # functions decorated, and the copies into a function's return (see _returned_parameters)
        self._declares_metaclass: set[str] = set()
        self.originals: set[str] = set()
        returns: list[FlowRow] = []
        declaration = "." + METACLASS
        for fact in facts:  # one pass for all three, and the parameters
            op = fact[OP]
            if op == "copy":
                target = fact[TARGET]
                if target.endswith(RETURN):
                    returns.append(fact)
                elif target.endswith(declaration):
                    self._declares_metaclass.add(target)
            elif op == "decorated":
                self.originals.add(fact[NAME])
            elif op == "params":
                self.params[fact[TARGET]] = fact[ARGS]
                self._receiver_of(fact[TARGET], fact[ARGS])
        # a parameter annotated with classes only holds their instances (see :mod:`.annotations`)
        self.declared = declared_types(resolver, self.params)
        # the plans, by name (or key), then value: two lookups of strings whose hash is kept,
        # rather than one of a tuple hashed anew each time (a third of the time)
        self._load_plans: dict[str, dict[str, _LoadPlan]] = {}  # name -> value -> see _load_plan
        self._store_plans: dict[str, dict[str, tuple[str, str, tuple[str, ...]]]] = {}  # see _store_plan
        self._element_plans: dict[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {}
        self._element_store_plans: dict[str, dict[str, tuple[str, ...]]] = {}
        self._shapes: dict[str, _Shape] = {}  # function -> its parameters, sorted by kind
        # (id of a call fact, function, no receiver) -> the parameters its arguments were bound to
        # (see _pair: torch's 220,000 as tuples of an id and a qualname the solve made were 35 MB)
        self._bound_calls: dict[int, dict[str, str]] = {}
        self._numbers: dict[str, int] = {}  # the qualnames of those two tables -> a number each
        self.passthrough = self._returned_parameters(returns)  # function -> the parameters it returns as is
        del returns
        variables = {f"{function}.{name}": function for function, names in self.passthrough.items() for name in names}
        copy, add, watch, other = self.copy, self.add, self.watch, self.fact
        # Read from the end of the reversed list, each row is let go as soon as it is read (unless
        # watched): the memory of the rows that go is reused by what the graph makes as it grows,
        # rather than all freed at the end (torch: at the solve's peak, 248,000 row-sized blocks
        # are free instead of 329,000).
        facts.reverse()
        take = facts.pop
        while facts:  # :meth:`fact`, its commonest rows inline
            fact = take()
            if variables and (fact[SOURCE] in variables or fact[TARGET] in variables):
                for each in self._per_call(fact, variables):
                    other(each)
                continue
            op = fact[OP]
            if op == "copy":
                copy(fact[SOURCE], fact[TARGET])
            elif op == "value":
                add(fact[TARGET], (fact[SOURCE],))
            elif op in _WATCHED_SOURCE:
                watch(fact[SOURCE], fact)
            else:
                other(fact)
        self.solve()
        for _ in range(3):  # a definition whose decorators gave nothing keeps the function itself
            missing = [fact for fact in self.decorated if not self._internal(self.values_of(fact[SOURCE]))]
            self.decorated = [fact for fact in self.decorated if self._internal(self.values_of(fact[SOURCE]))]
            if not missing:
                break
            for fact in missing:
                self.add(fact[TARGET], {fact[NAME]})
            self.forget_plans()
            self.solve()
        # A method no call of the program reaches (an entry point: ``collector.start()`` is the
        # user's call) still runs on an instance of its class: its ``self`` holds one, so that what
        # it does with ``self`` (hands ``self._run`` to a thread) is seen.
        for variable in sorted(self.receivers):
            if not self.values_of(variable):
                self.add(variable, ("i:" + self.receivers[variable],))
        self.forget_plans()
        self.solve()

    def forget_plans(self) -> None:
        """Let the memos go before a solve that follows another: each is a function of tables
        that the solve does not change (the resolver's, the parameters, the declared metaclasses;
        a field's variable, once made, keeps its number), so what the next solve asks again is
        made again the same, and the rest is not held through it.  The last solve meets few
        (value, name) pairs of the first: its own growth reuses their memory (torch: 150 MB of
        memos after the first solve, the peak at the end of the last one)."""
        for memo in self._memos():
            memo.clear()

    def _memos(self) -> tuple[dict[Any, Any], ...]:
        """The tables that only remember what a function of the static tables gave."""
        return (
            self._load_plans,
            self._store_plans,
            self._element_plans,
            self._element_store_plans,
            self._paths,
            self._shapes,
            self._subclass_memo,
            self._fits_memo,
            self._metaclass_variables,
            self._metaclass_memo,
        )

    def _returned_parameters(self, returns: list[FlowRow]) -> dict[str, list[str]]:
        """The parameters each function returns as is, of the copies into functions' returns
        (``return p`` of a parameter ``p``): the facts that make them are made per call
        (:meth:`_per_call`).

        A function that returns a parameter (``return self``, ``return policy`` of a wrapper that
        may wrap it) would, merged over every call, return at each call what any call passed.
        So ``return p`` does not flow into the function's return: each call's result receives
        its own argument for ``p`` (the receiver for ``self``; ``p``'s default when the call
        omits it), plus what the function itself assigns to ``p`` (``<own>``).
        """
        returned: dict[str, list[str]] = defaultdict(list)
        for fact in returns:
            if fact[TARGET] == f"{fact[SCOPE]}.{RETURN}":
                names = self.params.get(fact[SCOPE], ())
                bare = fact[SOURCE].removeprefix(fact[SCOPE] + ".")
                is_parameter = any(_bare(name) == bare and not name.startswith("*") for name in names)
                if bare != fact[SOURCE] and is_parameter and bare not in returned[fact[SCOPE]]:
                    returned[fact[SCOPE]].append(bare)
        return dict(returned)

    @staticmethod
    def _per_call(fact: FlowRow, variables: dict[str, str]) -> Iterator[FlowRow]:
        """What ``fact`` becomes when it reads or writes a returned parameter (``variables``:
        each returned parameter's variable -> its function): ``return p`` is the function's own
        value of ``p``; an assignment to ``p`` is also one to its ``<own>`` (in the function
        itself) or its ``<default>`` (elsewhere: its default value)."""
        function = variables.get(fact[SOURCE]) if fact[OP] == "copy" else None
        if function is not None and fact[TARGET] == f"{function}.{RETURN}":
            yield Flow._make(fact)._replace(source=fact[SOURCE] + OWN)
            return
        yield fact
        owner = variables.get(fact[TARGET])
        if owner is not None and fact[OP] not in ("store", "elem_store", "params"):
            suffix = OWN if fact[SCOPE] == owner else DEFAULT
            yield Flow._make(fact)._replace(target=fact[TARGET] + suffix)

    def _receiver_of(self, function: str, names: tuple[str, ...]) -> None:
        """Note ``self`` of a method: it only ever holds an instance of the class or of a subclass."""
        symbol = self.symbols.get(function)
        if symbol is None or symbol.kind not in (METHOD, PROPERTY) or not names or names[0].startswith(("*", "kw:")):
            return
        if "staticmethod" in symbol.decorators or "classmethod" in symbol.decorators:
            return
        cls = function.rpartition(".")[0]
        if self._is_metaclass(cls):  # its methods' ``self`` is a class made by it
            return
        self.receivers[f"{function}.{names[0]}"] = cls

    def _is_metaclass(self, cls: str) -> bool:
        """Whether ``cls`` derives from ``type`` (``abc.ABCMeta`` does), as its bases are written
        (memoized along the hierarchy: linear in its size, however deep)."""

        def own(owner: str) -> bool | None:
            symbol = self.symbols.get(owner)
            written = symbol.bases if symbol is not None else ()
            return True if any(base in _TYPE_BASES or base.endswith(".ABCMeta") for base in written) else None

        return bool(first_in_mro(self.resolver.bases, cls, self._metaclass_memo, own))

    def _fits(self, value: str, declared: Declared) -> bool:
        """Whether ``value`` may be held by a parameter annotated with ``declared``: an instance of
        one of its classes (or of a subclass); an outside object always may."""
        if value.startswith("ext:"):
            return True
        if value.startswith(("new:", "pairs:")):
            return CONTAINER in declared.classes
        if not value.startswith("i:"):
            return False
        memo = self._fits_memo.setdefault(declared, {})
        found = memo.get(value)
        if found is None:
            found = memo[value] = declared.admits(self.resolver.bases, value[2:])
        return found

    def _instance_of(self, value: str, cls: str) -> bool:
        if not value.startswith("i:"):
            return True
        memo = self._subclass_memo.setdefault(cls, {})
        return bool(first_in_mro(self.resolver.bases, value[2:], memo, lambda k: True if k == cls else None))

    # -- the graph -------------------------------------------------------------------------
    def guarded(self, name: str) -> bool:
        # the two tables asked in turn, not a set of their union (torch: 9 MB through the solve)
        return name in self.receivers or name in self.declared or name[-1] == "]"  # an element: see :meth:`admit`

    def admit(self, name: str, values: Collection[str]) -> Collection[str]:
        cls = self.receivers.get(name)
        if cls is not None:  # an unrelated instance passed on by a generic wrapper is no ``self``
            values = [value for value in values if value.startswith("i:") and self._instance_of(value, cls)]
        declared = self.declared.get(name)
        if declared is not None:
            values = [value for value in values if self._fits(value, declared)]
        if name[-1] == "]":  # a container is not its own element (``x = [x, ...]`` merged flow-insensitively)
            own = "new:" + name[: name.find("[")]
            values = [value for value in values if value != own]
        return values

    def again(self, fact: FlowRow, values: tuple[str, ...]) -> list[str]:
        # a call of an outside function or a container's method may watch a variable with a
        # fact made anew each time: made again, it reads at once what that variable holds by
        # then, earlier than the first would (the order a capped variable keeps)
        if fact[OP] != "call":
            return []
        return [value for value in values if value.startswith(("ext:", "cm:"))]

    def visited(self, name: str, values: Collection[str]) -> None:
        if name in self.decorations:
            self.decorate(name, values)

    def decorate(self, result: str, values: Iterable[str]) -> None:
        """What a decorator returns, for the definition it decorates.  A decorator that may return
        its argument returns, to a flow-insensitive solver, every function it decorates anywhere:
        only this definition's own function is kept of those."""
        for target, original in self.decorations[result]:
            self.add(target, [value for value in values if value == original or value not in self.originals])

    # -- facts -----------------------------------------------------------------------------
    def fact(self, fact: FlowRow) -> None:
        op = fact[OP]
        if op == "value":
            self.add(fact[TARGET], (fact[SOURCE],))
        elif op == "copy":
            self.copy(fact[SOURCE], fact[TARGET])
        elif op == "ref":
            self.reference(fact[SOURCE], fact[NAME], fact[TARGET])
        elif op in ("load", "elem_load", "call"):
            self.watch(fact[SOURCE], fact)
        elif op in ("store", "elem_store"):
            self.watch(fact[TARGET], fact)
        elif op == "decorated":
            self.decorations[fact[SOURCE]].append((fact[TARGET], fact[NAME]))
            self.decorated.append(fact)
            if self.values_of(fact[SOURCE]):
                self.decorate(fact[SOURCE], self.values_of(fact[SOURCE]))

    def handle(self, fact: FlowRow, values: list[str]) -> None:
        op = fact[OP]
        if op == "load":
            name, target = fact[NAME], fact[TARGET]
            for value in values:
                self.load(value, name, target, fact)
        elif op == "call":
            via_getattr = self.via_getattr
            for value in values:
                if via_getattr:
                    side = via_getattr.get(fact[SOURCE])  # per value: a call below may set it
                    self._through_getattr = side is not None and value in self.values_of(side)
                self.call(fact, value)
                self._through_getattr = False
        elif op == "elem_load":
            for value in values:
                self.element_load(value, fact[NAME], fact[TARGET])
        elif op == "elem_store":
            for value in values:
                self.element_store(value, fact[NAME], fact[SOURCE])
        elif op == "store":
            for value in values:
                self.store(value, fact[NAME], fact[SOURCE], fact)
        elif op == "metacall":
            for value in values:
                self.metaclass_call(fact, value)
        elif op == "super_of":
            for value in values:
                if value.startswith("cls:"):
                    self.add(fact[TARGET], (f"super:{fact[NAME]}|{value}",))

    def reference(self, dotted: str, bare: str, target: str) -> None:
        """What a dotted name denotes: a definition's value, a module variable, or an outside name."""
        resolver = self.resolver
        found = resolver.canonical(dotted)
        if found is not None:
            self.symbol_value(found, target)
            return
        if bare:  # a name not bound in its module: an import the table knows, else a builtin
            module = resolver.module_of(dotted)
            outside = resolver.external_name(module, module, (bare,)) if module else None
            if outside is not None:
                self.add(target, ("ext:" + outside,))
            return
        outside = resolver.outside_name(dotted)
        if outside is not None:
            self.add(target, ("ext:" + outside,))

    def symbol_value(self, qualname: str, target: str) -> None:
        symbol = self.symbols.get(qualname)
        if symbol is None:
            if qualname in self.resolver.modules:
                self.add(target, ("mod:" + qualname,))
            return
        kind = symbol.kind
        if kind == MODULE:
            self.add(target, ("mod:" + qualname,))
        elif kind == CLASS:
            self.add(target, ("cls:" + qualname,))
        elif kind in _FUNCTION_KINDS:
            self.add(target, ("fn:" + qualname,))
        if kind in (VARIABLE, ATTRIBUTE, CLASS, FUNCTION, METHOD, PROPERTY):
            self.copy(qualname, target)  # what the module (or class) variable holds

    # -- attributes ------------------------------------------------------------------------
    def load(self, value: str, name: str, target: str, fact: FlowRow) -> None:
        plans = self._load_plans.get(name)
        if plans is None:
            plans = self._load_plans[name] = {}
        plan = plans.get(value)
        if plan is None:
            plan = plans[value] = self._load_plan(value, name)
        if plan is _OTHER:
            self.other_load(value, name, target)
            return
        if plan[0] is not None:  # a value (``apply:C``, ``attrs:C``, ``cm:ID|m``...), or none
            if plan[0]:
                self.add(target, plan[0])
            return
        # ``obj.name`` for an instance (or the class): the fields along the MRO, the first definition
        _, known, fallback, getter, fields = plan
        if known:
            self.member_found.add(target)
        elif fallback:
            self.getattr_fallback(fact, value[2:], value)
        if getter:
            self.edge(fact, getter, "flow")
            self.bind_receiver(getter, value)
            self.copy(f"{getter}.{RETURN}", target)
            return
        destination = self.ids.get(target)
        if destination is None:
            destination = self.variable(target)
        for origin in fields:
            self.bind_to(origin, destination, value)

    def _load_plan(self, value: str, name: str) -> _LoadPlan:
        """What ``obj.name`` does for ``value`` whatever the load (a function of the tables: made
        once per value and name): :data:`_OTHER` (a module's or ``super()``'s attribute: see
        :meth:`other_load`), or (the values it gives, or ``None`` for a member read; known;
        answered by ``__getattr__``; the property getter; the variables of the fields read)."""
        kind, _, rest = value.partition(":")
        if kind == "cls" and name == "apply" and self._autograd_apply(rest):
            return (("apply:" + rest,), False, False, "", ())
        if kind == "new":
            return ((f"pairs:{rest}",) if name == "<enumerate>" else (f"cm:{rest}|{name}",), False, False, "", ())
        if kind == "ext":
            given = (f"ext:{rest}.{name}",) if rest.count(".") < 4 and not name.startswith("_") else ()
            return (given, False, False, "", ())
        if kind in ("mod", "super"):
            return _OTHER
        if kind not in ("i", "cls"):
            return _NONE
        if kind == "i" and name == "__dict__":
            return ((f"attrs:{rest}",), False, False, "", ())
        fields, getter, known = self.member_path(rest, name)
        # nothing defines or assigns ``name``: ``__getattr__`` answers, if the class has one
        # (not a library class: what it generates, tensorclass's methods, is not visible)
        fallback = kind == "i" and not known and not rest.startswith(self.library or ("\0",))
        known = kind == "i" and known
        if getter and kind == "i":
            return (None, known, fallback, getter, ())
        return (None, known, fallback, "", tuple(self.variable(field) for field in fields))

    def other_load(self, value: str, name: str, target: str) -> None:
        """``obj.name`` for a module or ``super()``."""
        kind, _, rest = value.partition(":")
        if kind == "mod":
            self.reference(f"{rest}.{name}", "", target)
            self.copy(f"{rest}.{name}", target)
        elif kind == "super":
            cls, _, receiver = rest.partition("|")
            for base in self.resolver.bases.get(cls, ()):
                found = self.resolver.member(base, name)  # the first definition after cls in its MRO
                if found is not None:
                    self.bind_copy(found, target, receiver)
                    break
            else:
                if name == "__call__" and receiver.startswith("cls:"):
                    # ``super().__call__(...)`` in a metaclass's ``__call__``: ``type.__call__``,
                    # which makes the instance and runs its ``__init__``
                    self.add(target, ("make:" + receiver[4:],))

    def _autograd_apply(self, cls: str) -> bool:
        """Whether ``cls.apply`` is ``torch.autograd.Function.apply`` (not overridden), on a
        subclass that defines ``forward``."""
        resolver = self.resolver
        if resolver.member(cls, "apply") is not None or resolver.member(cls, "forward") is None:
            return False
        stack, seen = [cls], {cls}
        while stack:  # the source's classes, then the bases outside it by the name the source gives
            current = stack.pop()
            symbol = self.symbols.get(current)
            if symbol is None:
                continue
            module = resolver.module_of(current)
            scope = current.rpartition(".")[0]
            for text in symbol.bases:
                parts = tuple(text.split("[", 1)[0].split("."))
                if not all(part.isidentifier() for part in parts):
                    continue
                if resolver.external_name(module, scope, parts) in _AUTOGRAD_FUNCTION:
                    return True
            for base in resolver.bases.get(current, ()):
                if base not in seen:
                    seen.add(base)
                    stack.append(base)
        return False

    def getattr_fallback(self, fact: FlowRow, cls: str, receiver: str) -> None:
        """``obj.name`` answered by ``__getattr__``; what it returns is kept apart (``<getattr>``)
        so that the edges it leads to are known (``by_getattr``) when :meth:`targets` decides."""
        member = self.resolver.member(cls, "__getattr__")
        if member is None or self.symbols[member].kind not in (METHOD, FUNCTION):
            return
        self._through_getattr = True
        self.edge(fact, member, "implicit")
        self._through_getattr = False
        self.bind(member, fact, receiver, result=False)
        side = fact[TARGET] + "<getattr>"
        self.via_getattr[fact[TARGET]] = side
        self.copy(f"{member}.{RETURN}", side)
        self.copy(side, fact[TARGET])

    def member_path(self, cls: str, name: str) -> tuple[tuple[str, ...], str, bool]:
        """The variables ``obj.name`` reads for an instance of ``cls`` (the field of the class that
        introduces the attribute, and the first definition along the MRO), the property getter
        when that definition is one, and whether anything defines or assigns ``name``.  Memoized
        walks only: a 3,000-level chain costs the chain once."""
        key = (cls, name)
        found = self._paths.get(key)
        if found is None:
            resolver = self.resolver
            owner = resolver.attribute_owner(cls, name)
            fields = [f"{owner or cls}.{name}"]  # :meth:`field`
            getter = ""
            defined = resolver.member(cls, name)
            if defined is not None:
                if self.symbols[defined].kind == PROPERTY:
                    getter = defined
                elif defined not in fields:
                    fields.append(defined)
            found = self._paths[key] = (tuple(fields), getter, defined is not None or bool(owner))
        return found

    def field(self, cls: str, name: str) -> str:
        """The variable of attribute ``name`` of instances of ``cls``: under the class that assigns it."""
        return f"{self.resolver.attribute_owner(cls, name) or cls}.{name}"

    def store(self, value: str, name: str, source: str, fact: FlowRow) -> None:
        plans = self._store_plans.get(name)
        if plans is None:
            plans = self._store_plans[name] = {}
        plan = plans.get(value)
        if plan is None:
            plan = plans[value] = self._store_plan(value, name)
        setattr_method, setter, targets = plan
        if setattr_method:
            self.edge(fact, setattr_method, "implicit")  # ``obj.x = v`` runs the class's ``__setattr__``
            self.bind_receiver(setattr_method, value)
        if setter:
            self.edge(fact, setter, "setter")
            self.bind_receiver(setter, value)
        for target in targets:
            self.copy(source, target)

    def _store_plan(self, value: str, name: str) -> tuple[str, str, tuple[str, ...]]:
        """What ``obj.name = v`` does for ``value`` (made once per value and name): the
        ``__setattr__`` it runs, the property setter it runs, the variables ``v`` goes to."""
        kind, _, rest = value.partition(":")
        if kind == "i":
            setattr_method = self.resolver.member(rest, "__setattr__")
            if setattr_method is None or self.symbols[setattr_method].kind != METHOD:
                setattr_method = ""
            member = self.resolver.member(rest, name)
            if member is not None and self.symbols[member].kind == PROPERTY:
                names = self.params.get(member, ())
                given = len(names) > 1 and not names[1].startswith(("*", "kw:"))
                return setattr_method, member, (f"{member}.{names[1]}",) if given else ()
            return setattr_method, "", (self.field(rest, name),)
        if kind in ("cls", "mod"):
            return "", "", (f"{rest}.{name}",)
        return "", "", ()

    def bind_receiver(self, function: str, receiver: str) -> None:
        names = self.params.get(function, ())
        if names and not names[0].startswith(("*", "kw:")):
            self.add(f"{function}.{names[0]}", (receiver,))

    def bound(self, values: Iterable[str], receiver: str) -> list[str]:
        """Functions read through ``receiver`` become methods bound to it (a static method does not)."""
        found = []
        for value in values:
            if value.startswith("fn:"):
                qualname = value[3:]
                symbol = self.symbols.get(qualname)
                if symbol is not None and symbol.kind in (METHOD, PROPERTY):
                    if "staticmethod" in symbol.decorators:
                        found.append(value)
                        continue
                    if "classmethod" in symbol.decorators:
                        cls = "cls:" + receiver.partition(":")[2]
                        found.append(f"b:{cls}|{qualname}")
                        continue
                    if receiver.startswith("i:") or (
                        # a class is the instance of its metaclass: ``super().__call__`` in a
                        # metaclass's method is bound to the class being made
                        receiver.startswith("cls:") and self._is_metaclass(qualname.rpartition(".")[0])
                    ):
                        found.append(f"b:{receiver}|{qualname}")
                        continue
            found.append(value)
        return found

    # -- containers ------------------------------------------------------------------------
    def element_load(self, value: str, key: str, target: str) -> None:
        plans = self._element_plans.get(key)
        if plans is None:
            plans = self._element_plans[key] = {}
        plan = plans.get(value)
        if plan is None:
            plan = plans[value] = self._element_plan(value, key)
        for source in plan[0]:
            self.copy(source, target)
        if plan[1]:
            self.add(target, plan[1])

    def _element_plan(self, value: str, key: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """What reading element ``key`` of ``value`` gives (made once per value and key): the
        variables copied from, the values added."""
        kind, _, rest = value.partition(":")
        if kind == "attrs" and key[:1] in ("'", '"'):  # ``self.__dict__["x"]`` is attribute ``x``
            return (self.field(rest, key[1:-1]),), ()
        if kind == "new":
            return ((f"{rest}[{key}]", f"{rest}[?]") if key else (f"{rest}[]",)), ()
        if kind == "pairs":  # an element of ``d.items()``: a (key, value) pair
            return (), (f"pair:{rest}",)
        if kind == "pair" and key in ("", "1"):
            return (f"{rest}[]",), ()
        return (), ()

    def element_store(self, value: str, key: str, source: str) -> None:
        plans = self._element_store_plans.get(key)
        if plans is None:
            plans = self._element_store_plans[key] = {}
        plan = plans.get(value)
        if plan is None:
            plan = plans[value] = self._element_store_plan(value, key)
        for target in plan:
            self.copy(source, target)

    def _element_store_plan(self, value: str, key: str) -> tuple[str, ...]:
        """The variables a store into element ``key`` of ``value`` writes (made once per value and key)."""
        kind, _, rest = value.partition(":")
        if kind == "attrs" and key[:1] in ("'", '"'):  # ``self.__dict__["x"] = v`` sets ``x``, no setter runs
            return (self.field(rest, key[1:-1]),)
        if kind == "new":
            return (f"{rest}[]", f"{rest}[{key}]" if key else f"{rest}[?]")
        return ()

    # -- calls -----------------------------------------------------------------------------
    def edge(self, fact: FlowRow, callee: str, how: str) -> None:
        key = (fact[SCOPE], fact[LINE], fact[NAME])
        how = self.hows.get(id(fact), how)
        self.site_source.setdefault(key, fact[TARGET] if fact[OP] == "load" else fact[SOURCE])
        edges = self.edges
        callees = edges.get(key)
        if callees is None:
            known = None
        elif type(callees) is tuple:
            known = callees[1] if callees[0] == callee else None
        else:
            known = callees.get(callee)  # type: ignore[union-attr]
        if self._through_getattr:
            if known is None:
                self.by_getattr.add((key, callee))
        elif self.by_getattr:
            self.by_getattr.discard((key, callee))
        how = min(how, known) if known else how  # the same label in any order
        if known is None:  # a callee's text is often cut anew from a value: one copy of it is kept
            callee = intern(callee)
        if callees is None or (type(callees) is tuple and callees[0] == callee):
            edges[key] = (callee, how)
        elif type(callees) is tuple:
            edges[key] = {callees[0]: callees[1], callee: how}
        else:
            callees[callee] = how  # type: ignore[index]

    def call(self, fact: FlowRow, value: str) -> None:
        kind, _, rest = value.partition(":")
        if fact[NAME] == "!raise":
            if kind == "cls":
                self.construct(fact, rest)
            return
        implicit = fact[NAME].startswith(".")
        if implicit:
            if kind == "i":
                self.call_method(fact, rest, fact[NAME][1:], value, "implicit")
            return
        if kind == "fn":
            self.edge(fact, rest, "decorator" if fact[NAME].startswith("@") else "flow")
            self.bind(rest, fact, None)
        elif kind == "b":
            receiver, _, qualname = rest.partition("|")
            self.edge(fact, qualname, "flow")
            self.bind(qualname, fact, receiver)
        elif kind == "cls":
            self.construct(fact, rest)
        elif kind == "make":
            self.construct(fact, rest, through_metaclass=True)
        elif kind == "apply":
            forward = self.resolver.member(rest, "forward")
            if forward is not None and self.symbols[forward].kind in (METHOD, FUNCTION):
                self.edge(fact, forward, "implicit")
        elif kind == "i":
            if not self.call_method(fact, rest, "__call__", value, "implicit"):
                self.call_method(fact, rest, "forward", value, "implicit")
        elif kind == "cm":
            self.container_call(fact, rest)
        elif kind == "ext":
            self.external_call(fact, rest)

    def call_method(self, fact: FlowRow, cls: str, name: str, receiver: str, how: str) -> bool:
        member = self.resolver.member(cls, name)
        if member is None or self.symbols[member].kind not in (METHOD, FUNCTION):
            return False
        self.edge(fact, member, how)
        self.bind(member, fact, receiver)
        return True

    def construct(self, fact: FlowRow, cls: str, through_metaclass: bool = False) -> None:
        """``C(...)``: an instance of ``C`` whose ``__init__`` runs; first, the ``__call__`` of
        ``C``'s metaclass if it defines one.  ``through_metaclass``: the call is that ``__call__``'s
        ``super().__call__(...)``, which runs ``__init__`` (an ``implicit`` edge)."""
        self.add(fact[TARGET], ("i:" + cls,))
        init = self.resolver.member(cls, "__init__")
        how = "implicit" if through_metaclass else "flow"
        if init is not None and self.symbols[init].kind in (METHOD, FUNCTION):
            self.edge(fact, init, how)
            # through the metaclass, the arguments are every construction's (``*args`` of its
            # ``__call__``): those of each construction reached ``__init__`` at its own site
            self.bind(init, fact, "i:" + cls, arguments=not through_metaclass)
        elif not through_metaclass:
            self.edge(fact, cls, "flow")
        if not through_metaclass and fact[NAME] != "!raise":
            self.watch_metaclass(fact, cls)

    def watch_metaclass(self, fact: FlowRow, cls: str) -> None:
        """Watch the ``metaclass=`` of ``cls`` and of its bases for the constructor call ``fact``."""
        pair = self._pair(fact, cls)
        if pair in self._metaclass_watched:
            return
        self._metaclass_watched.add(pair)
        if not self._declares_metaclass:
            return
        # the nearest class along the MRO that declares one (a subclass's metaclass derives from
        # its bases': the most derived is the one Python uses)
        declared = self._declares_metaclass
        nearest = first_in_mro(
            self.resolver.bases,
            cls,
            self._metaclass_variables,
            lambda owner: f"{owner}.{METACLASS}" if f"{owner}.{METACLASS}" in declared else None,
        )
        for variable in (nearest,) if nearest else ():
            watcher = Flow("metacall", fact[TARGET], variable, fact[NAME], fact[ARGS], fact[LINE], fact[SCOPE])
            self._keep.append(watcher)
            self._metacalls[id(watcher)] = (fact, cls)
            self.watch(variable, watcher)

    def _pair(self, fact: FlowRow, qualname: str) -> int:
        """A fact (by identity: a watched fact lives as long as the solve) and a qualname as one
        number: the id's bits, then the qualname's number, of 32 bits (a tuple of the id and the
        qualname would hold a second copy of the qualname the solve cut out of a value)."""
        number = self._numbers.get(qualname)
        if number is None:
            number = self._numbers[qualname] = len(self._numbers)
            if number >> 32:
                raise OverflowError("more than 2**32 qualnames")
        return id(fact) << 32 | number

    def metaclass_call(self, watcher: FlowRow, value: str) -> None:
        """The metaclass ``value`` of a class being made: its ``__call__`` runs with ``cls`` the class."""
        if not value.startswith("cls:"):
            return
        fact, cls = self._metacalls[id(watcher)]
        call = self.resolver.member(value[4:], "__call__")
        if call is not None and self.symbols[call].kind == METHOD:
            self.edge(fact, call, "implicit")
            # not its result: shared by every class it makes, it would give each construction
            # the instances of all of them (the construction is an instance of its own class)
            self.bind(call, fact, "cls:" + cls, result=False)

    def bind(
        self, function: str, fact: FlowRow, receiver: str | None, result: bool = True, arguments: bool = True
    ) -> None:
        """Arguments to parameters, the return value to the call's result (either may be left out)."""
        shape = self._shapes.get(function)
        if shape is None:
            shape = self._shapes[function] = _Shape.of(function, self.params.get(function))
        if result:
            self.copy(shape.returns, fact[TARGET])
        if not shape.known:
            return
        positional, variables = shape.positional, shape.variables
        first = shape.first
        if not arguments:
            if receiver is not None and positional:
                self.add(variables[0], (receiver,))
            if result:
                self.returned(function, fact, receiver, first, None)
            return
        skip = 0  # the positional parameters the receiver takes
        if receiver is not None and positional:
            self.add(variables[0], (receiver,))
            skip = 1
        key = self._pair(fact, function) << 1 | (receiver is None)
        bound = self._bound_calls.get(key)
        if bound is not None:  # the arguments are bound already: only the receiver differs
            if result:
                self.returned(function, fact, receiver, first, bound)
            return
        given: dict[str, str] = {}  # parameter -> the variable this call passes ("" unknown)
        # only a function that returns a parameter reads them again (:meth:`returned`)
        self._bound_calls[key] = given if function in self.passthrough else _UNREAD
        keywords, star, double = shape.keywords, shape.star, shape.double
        count = len(positional) - skip
        index = 0
        for arg in fact[ARGS]:
            if arg[:1] == "*":
                if arg[1:2] == "*":  # ``**d`` (the variable holds ``d``): its element under each name
                    for name in sorted(keywords):
                        self.elements(arg[2:], f"{function}.{name}", repr(name), fact)
                        given.setdefault(name, "")
                    if double:
                        self.elements(arg[2:], f"{function}.<**{double}>[]", "", fact)
                else:  # ``*xs`` (the variable holds ``xs``): its elements by position
                    for offset, name in enumerate(positional[skip + index :]):
                        self.elements(arg[1:], variables[skip + index + offset], str(offset), fact)
                        given[name] = ""
                    if star:
                        self.elements(arg[1:], f"{function}.<*{star}>[]", "", fact)
            elif "=" in arg and not arg.startswith("=s:"):
                name, _, variable = arg.partition("=")
                if name in keywords:
                    self.copy(variable, f"{function}.{name}")
                    given[name] = variable
                elif double:
                    self.copy(variable, f"{function}.<**{double}>[]")
                    self.copy(variable, f"{function}.<**{double}>['{name}']")
            else:
                if index < count:
                    if not arg.startswith("=s:"):
                        self.copy(arg, variables[skip + index])
                        given[positional[skip + index]] = arg
                elif star and not arg.startswith("=s:"):
                    self.copy(arg, f"{function}.<*{star}>[]")
                    self.copy(arg, f"{function}.<*{star}>[{index - count}]")
                index += 1
        if result:
            self.returned(function, fact, receiver, first, given)

    def returned(
        self, function: str, fact: FlowRow, receiver: str | None, first: list[str], given: dict[str, str] | None
    ) -> None:
        """What a call gets back of the parameters the function returns as is (see
        :meth:`_returned_parameters`): its receiver, its own arguments, else the defaults
        (``given`` ``None``: the arguments are not this call's, every one is possible)."""
        for name in self.passthrough.get(function, ()):
            variable = f"{function}.{name}"
            self.copy(variable + OWN, fact[TARGET])
            if receiver is not None and first == [name]:
                self.add(fact[TARGET], (receiver,))
            elif given is None or given.get(name) == "":
                self.copy(variable, fact[TARGET])
            elif name in given:
                self.copy(given[name], fact[TARGET])
            else:
                self.copy(variable + DEFAULT, fact[TARGET])

    def elements(self, source: str, target: str, key: str, fact: FlowRow) -> None:
        """``target`` holds the elements of what ``source`` holds (at constant ``key``, or any)."""
        if (source, target, key) in self._unpacked:
            return
        target = intern(target)  # made anew for each call: the fact, the set and the variable share one
        self._unpacked.add((source, target, key))
        self.watch(source, Flow("elem_load", target, source, key, (), fact[LINE], fact[SCOPE]))

    def container_call(self, fact: FlowRow, rest: str) -> None:
        container, _, method = rest.partition("|")
        if method in _CONTAINER_READS:
            self.copy(f"{container}[]", fact[TARGET])
        elif method in _CONTAINER_SAME:
            self.add(fact[TARGET], ("new:" + container,))
        elif method == "items":
            self.add(fact[TARGET], ("pairs:" + container,))
        elif method in _CONTAINER_WRITES and fact[ARGS]:
            self.copy(fact[ARGS][-1], f"{container}[]")
            self.copy(fact[ARGS][-1], f"{container}[?]")
        elif method in _CONTAINER_EXTENDS and fact[ARGS]:
            element = f"{fact[TARGET]}.<element>"
            self.watch(fact[ARGS][0], Flow("elem_load", element, fact[ARGS][0], "", (), fact[LINE], fact[SCOPE]))
            self.copy(element, f"{container}[]")
            self.copy(element, f"{container}[?]")

    def external_call(self, fact: FlowRow, name: str) -> None:
        args = fact[ARGS]
        written = fact[NAME]
        if written and written[0] not in "@." and written != name and not name.endswith("." + written):
            # an outside function reached through a value (``sync = torch.cuda.synchronize``,
            # ``self._sync()``): a callee of the site, which does not name it (one that names
            # it, ``torch.cat(x)``, ``cat(x)``, resolves by name)
            self.edge(fact, name, "flow")
        if name == "builtins.super":
            cls = self.resolver.enclosing_class(fact[SCOPE])
            names = self.params.get(fact[SCOPE], ())
            if cls and names and self._is_metaclass(cls):  # ``super()`` bound to the class being made
                first = f"{fact[SCOPE]}.{names[0]}"
                self.watch(first, Flow("super_of", fact[TARGET], first, cls, (), fact[LINE], fact[SCOPE]))
            elif cls:
                self.add(fact[TARGET], (f"super:{cls}|i:{cls}",))
            return
        if name in ("builtins.getattr", "builtins.setattr") and len(args) >= 2 and args[1].startswith("=s:"):
            attribute = args[1][3:]
            if name == "builtins.getattr":
                self.watch(args[0], Flow("load", fact[TARGET], args[0], attribute, (), fact[LINE], fact[SCOPE]))
            elif len(args) >= 3:
                self.watch(args[0], Flow("store", args[0], args[2], attribute, (), fact[LINE], fact[SCOPE]))
            return
        if name == "functools.partial" and args:
            self.copy(args[0], fact[TARGET])
            return
        if name in _PASS_CONTAINER and args and not args[0].startswith(("*", "=")):
            self.copy(args[0], fact[TARGET])
        if name == "builtins.enumerate" and args and not args[0].startswith(("*", "=")):
            self.watch(args[0], Flow("load", fact[TARGET], args[0], "<enumerate>", (), fact[LINE], fact[SCOPE]))
        if name == "builtins.zip":
            self.zip(fact)
        if name in _ELEMENT_OF_FIRST and args and not args[0].startswith(("*", "=")):
            self.watch(args[0], Flow("elem_load", fact[TARGET], args[0], "", (), fact[LINE], fact[SCOPE]))
        callback = _CALLBACKS.get(name)
        if callback is not None:
            result = self.callback(fact, callback)
            if name in ("builtins.map", "builtins.filter"):  # an iterator over the function's results
                self.add(fact[TARGET], (f"new:{fact[TARGET]}.<map>",))
                self.copy(result, f"{fact[TARGET]}.<map>[]")
                self.copy(result, f"{fact[TARGET]}.<map>[?]")

    def zip(self, fact: FlowRow) -> None:
        """``zip(xs, ys)``: tuples whose element ``i`` is an element of the ``i``-th argument."""
        tuple_id = f"{fact[TARGET]}.<zip>"
        self.add(fact[TARGET], (f"new:{tuple_id}s",))
        self.add(f"{tuple_id}s[]", (f"new:{tuple_id}",))
        for position, arg in enumerate(fact[ARGS]):
            if not arg or arg.startswith(("*", "=")):
                continue
            element = f"{tuple_id}[{position}]"
            self.watch(arg, Flow("elem_load", element, arg, "", (), fact[LINE], fact[SCOPE]))
            self.copy(element, f"{tuple_id}[]")

    def callback(self, fact: FlowRow, spec: tuple[str, str]) -> str:
        """``map(f, xs)``: a call of ``f`` with an element of ``xs``, at the site of ``map``; the
        variable holding what the calls return."""
        result = f"{fact[TARGET]}.<callback>"
        swapped = (spec[1], spec[0]) if spec[0].isdigit() and spec[1].isdigit() else None
        for function_at, elements_at in (spec, swapped) if swapped else (spec,):
            function, elements = self._argument(fact[ARGS], function_at), self._argument(fact[ARGS], elements_at)
            if not function:
                continue
            call_args: tuple[str, ...] = ()
            if elements and elements_at == "args":  # ``Thread(target=f, args=xs)`` calls ``f(*xs)``
                call_args = ("*" + elements,)
            elif elements:  # ``map(f, xs)`` calls ``f(x)`` for each element ``x``
                element = f"{fact[TARGET]}.<element{elements_at}>"
                self.watch(elements, Flow("elem_load", element, elements, "", (), fact[LINE], fact[SCOPE]))
                call_args = (element,)
            mapping = self._argument(fact[ARGS], "kwargs") if elements_at == "args" else ""
            if mapping:  # ``Thread(..., kwargs=d)`` calls ``f(..., **d)``
                call_args += ("**" + mapping,)
            synthetic = Flow("call", result, function, fact[NAME], call_args, fact[LINE], fact[SCOPE])
            self._keep.append(synthetic)  # ``hows`` is keyed by id: the fact must outlive the solve
            self.hows[id(synthetic)] = "callback"
            self.watch(function, synthetic)
        return result

    @staticmethod
    def _argument(args: tuple[str, ...], position: str) -> str:
        if not position:
            return ""
        if position.isdigit():
            plain = [arg for arg in args if "=" not in arg or arg.startswith("=s:")]
            index = int(position)
            found = plain[index] if index < len(plain) else ""
            return "" if found.startswith(("*", "=")) else found
        prefix = position + "="
        return next((arg[len(prefix) :] for arg in args if arg.startswith(prefix)), "")

    def _internal(self, values: Iterable[str]) -> bool:
        return any(value.startswith(("fn:", "cls:", "b:", "i:")) for value in values)

    # -- results ---------------------------------------------------------------------------
    def release(self) -> None:
        """Let the graph and the solve's own tables go, all but what :meth:`targets` reads (the
        edges found, and what decides an edge found through ``__getattr__``): the targets are
        read once the rest is freed (torch: 450 MB of tables), not beside it."""
        super().release()
        tables: tuple[dict[Any, Any] | set[Any] | list[Any], ...] = (
            self.params,
            self.decorated,
            self.hows,
            self._subclass_memo,
            self._fits_memo,
            self.via_getattr,
            self._unpacked,
            self._paths,
            self._keep,
            self._metacalls,
            self._metaclass_watched,
            self._declares_metaclass,
            self._metaclass_variables,
            self._metaclass_memo,
            self.decorations,
            self.originals,
            self.receivers,
            self.declared,
            self._load_plans,
            self._store_plans,
            self._element_plans,
            self._element_store_plans,
            self._shapes,
            self._bound_calls,
            self._numbers,
            self.passthrough,
        )
        for table in tables:
            table.clear()

    def targets(self) -> dict[SiteKey, list[Target]]:
        """Every call site's callees found by value flow, each with how (sorted); it reads only
        the edges (see :meth:`release`)."""
        found: dict[SiteKey, list[Target]] = {}
        symbols = self.symbols
        for key, callees in self.edges.items():
            # ``__getattr__`` runs only when the attribute is missing: where some object the
            # receiver may hold has it, what ``__getattr__`` would give is not kept
            fallback_only = self.site_source.get(key) not in self.member_found
            pairs = (callees,) if type(callees) is tuple else sorted(callees.items())  # type: ignore[union-attr]
            targets = [
                Target(callee, how, external=callee not in symbols)  # (an outside function: see external_call)
                for callee, how in pairs
                if fallback_only or (key, callee) not in self.by_getattr
            ]
            if targets:
                found[key] = targets
        return found


class _Shape(NamedTuple):
    """A function's parameters as :meth:`ValueFlow.bind` matches arguments to them (and the
    variables it binds, named once)."""

    known: bool  # whether the function's parameters are known (a ``params`` fact)
    returns: str  # the variable of what it returns
    positional: tuple[str, ...]
    variables: tuple[str, ...]  # the variable of each positional parameter
    first: list[str]  # the first positional parameter, if any (what a receiver binds to)
    keywords: frozenset[str]  # every name a keyword may give
    star: str  # ``*args``'s name, or ""
    double: str  # ``**kwargs``'s name, or ""

    @classmethod
    def of(cls, function: str, names: tuple[str, ...] | None) -> _Shape:
        if names is None:
            return cls(False, f"{function}.{RETURN}", (), (), [], frozenset(), "", "")
        positional = tuple(name for name in names if not name.startswith(("*", "kw:")))
        return cls(
            True,
            f"{function}.{RETURN}",
            positional,
            tuple(f"{function}.{name}" for name in positional),
            list(positional[:1]),
            frozenset(name.removeprefix("kw:") for name in names if not name.startswith("*")),
            next((name[1:] for name in names if name.startswith("*") and not name.startswith("**")), ""),
            next((name[2:] for name in names if name.startswith("**")), ""),
        )


def _bare(name: str) -> str:
    """A parameter's name without its ``kw:`` mark."""
    return name.removeprefix("kw:")
