"""The parameters of each section kind, as the profile writes them (``[[pages.<page>.sections]]``).

Every kind is a msgspec Struct that forbids unknown fields, so a misspelt parameter is an error
naming the profile file, the page, the section and the field (with a suggestion), never a
silently empty section.  The common fields (``kind``, ``id``, ``title``, ``prose``, ``lead``)
are on :class:`Spec`; what each kind shows is documented on its class.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from rlmap.config import ONE_LINE
from rlmap.pages.versions import PATTERN as VERSIONS

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
Names = list[Name]
KeyNames = list[Name | list[Name]]  # "is_init" or ["collector", "traj_ids"]
Ident = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_]{0,60}$")]
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=5000)]
Depth = Annotated[int, msgspec.Meta(ge=1, le=6)]
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=ONE_LINE)]
Label = Annotated[str, msgspec.Meta(min_length=1, max_length=100, pattern=ONE_LINE)]
Summary = Annotated[str, msgspec.Meta(min_length=1, max_length=500, pattern=ONE_LINE)]


class Spec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Fields every section has.  ``title`` gives it a heading and a label (``rlmap_<slug>_<id>``),
    which needs an ``id``; without a title the section continues the one before it.  ``prose``
    names a ``[prose.<page>]`` entry shown under the heading; ``lead`` is a short curated line
    (jinja, ``sym()``/``name()``/``key()``/``term()``) shown before the section's content.
    ``versions`` limits the section to some releases of the package (:mod:`rlmap.pages.versions`)."""

    id: Ident | None = None
    title: Title | None = None
    prose: Ident | None = None
    lead: Text | None = None
    # the releases of the documented package this section applies to: ">=0.14, <0.16"
    versions: Annotated[str, msgspec.Meta(pattern=VERSIONS)] | None = None


class Phase(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A named run of the loop body's top-level statements.  It starts at the first statement
    (after the previous phase's start) that calls or touches ``starts_at`` (default: ``anchor``)
    and runs to the next phase; ``anchor`` must be called or touched inside it, so a phase whose
    code moved or vanished fails generation."""

    name: Label
    anchor: Name
    starts_at: Name | None = None


Fact = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class Configuration(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A way the function is commonly set up.  ``facts`` give the values of expressions as the
    code writes them (``"self.replay_buffer" = "None"``, ``"env_device" = "'cpu'"``; ``"..."`` is
    an object that is not None); every other attribute of ``self`` the conditions read is derived
    from where the code assigns it (:mod:`rlmap.pages.conditions`)."""

    id: Ident
    name: Label
    summary: Summary
    inherits: Ident | None = None  # an earlier configuration whose facts this one starts from
    facts: dict[Fact, Fact] = {}


class Flow(Spec, kw_only=True):
    """What ``function`` does, from its control flow: an outline with the branches as
    alternatives and the exits as exits, the loop named by ``loop`` (its header as written) in
    ``phases``, calls on locals, tensors and builtins (``plumbing``: call targets with these
    prefixes, and methods of local variables) left to a complete list of every call; for each of
    ``configurations``, which steps run.  ``diagram`` draws the control flow.  ``assignments``:
    attributes whose assignments in the function are steps of the outline as well."""

    function: Name
    class_: Name | None = msgspec.field(default=None, name="class")
    loop: Annotated[str, msgspec.Meta(min_length=1, max_length=500)] | None = None
    diagram: Ident | None = None
    phases: list[Phase] = []
    configurations: list[Configuration] = []
    plumbing: Names = msgspec.field(default_factory=lambda: ["builtins."])
    every_call: bool = True  # the complete list of calls in code order, after the outline
    # attributes of the class whose assignments in the function are steps of the outline too
    # (``_carrier``: ``self._carrier = env_next_output``, where the rollout advances its carrier)
    assignments: Names = []


class Callees(Spec, kw_only=True):
    """A diagram of the calls from ``function`` into ``scope``, breadth first to ``depth``."""

    function: Name
    class_: Name | None = msgspec.field(default=None, name="class")
    scope: Names = []
    depth: Depth = 1
    diagram: Ident


class Calls(Spec, kw_only=True):
    """For each class of ``classes``: its ``members`` (and ``members_of[<class name>]``) with the
    calls each makes into ``into``.  ``own_only`` lists a member the class does not define itself as
    the base's it inherits, with the methods it calls on ``self`` that the class overrides;
    ``none`` is said of a member that makes no such call.  ``diagram`` names one diagram of all
    the calls (``diagram_style = "edges"``) or, with ``{class}`` in it, one call diagram per class
    from its first member, ``depth`` deep (``diagram_style = "calls"``)."""

    classes: Names
    members: Names = msgspec.field(default_factory=lambda: ["forward"])
    members_of: dict[Name, Names] = {}
    own_only: bool = False
    into: Names = []
    none: Text | None = None
    diagram: Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_{}]{0,80}$")] | None = None
    diagram_style: Literal["calls", "edges"] = "edges"
    depth: Depth = 2


class Quotes(Spec, kw_only=True):
    """The source lines of the same functions as :class:`Calls` that hold one of ``markers``
    (substrings, not regular expressions); default markers are reshapes and time indexing."""

    classes: Names
    members: Names = msgspec.field(default_factory=lambda: ["forward"])
    members_of: dict[Name, Names] = {}
    markers: Names = []


class Dispatch(Spec, kw_only=True):
    """For each of ``functions`` (members of ``class`` when unqualified), a table of its calls
    into ``into``: which implementation runs under which condition (e.g. a vectorised kernel or
    the plain one)."""

    functions: Names
    class_: Name | None = msgspec.field(default=None, name="class")
    into: Names = []


class ProseOnly(Spec, kw_only=True):
    """Only a heading and a ``[prose.<page>]`` entry: words no code can say, between sections."""


class Returns(Spec, kw_only=True):
    """A table of what ``function`` returns, branch by branch, with the condition of each."""

    function: Name
    class_: Name | None = msgspec.field(default=None, name="class")


class Accesses(Spec, kw_only=True):
    """Every access to ``attributes`` (members of ``class``).  ``layout = "by-function"`` groups
    writes and reads by the function that makes them; ``"by-attribute"`` gives each attribute a
    heading and lists what ``show`` asks for: ``assigned`` (plain assignments and their value),
    ``set`` (assignments and augmented ones, with value and condition), ``called`` (calls of the
    attribute's value from ``scope``, with condition), ``read`` (reads, with condition)."""

    attributes: Names
    class_: Name | None = msgspec.field(default=None, name="class")
    layout: Literal["by-function", "by-attribute"] = "by-attribute"
    show: list[Literal["assigned", "set", "called", "read"]] = msgspec.field(default_factory=lambda: ["set", "read"])
    scope: Names = []


class KeyThrough(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Accesses no literal shows, held by a value instead (a primer's specs, a move from
    ``"next"`` to the root): the claim (``rlmap.pages.claims``) that checks the line doing it,
    the keys it writes and reads there, and how (``"every key of its primer specs"``)."""

    claim: Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_-]{0,80}$")]
    writes: KeyNames = []
    reads: KeyNames = []
    how: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class Keys(Spec, kw_only=True):
    """Writers and readers of tensordict ``keys`` within ``scope``: ``layout = "list"`` (where
    each key is written, then read), ``"tables"`` (a table per key, and a diagram named
    ``diagram``), ``"table"`` (one table of every access).  ``through`` adds the accesses that
    values hold, each at the line its claim checks."""

    keys: KeyNames
    through: list[KeyThrough] = []
    scope: Names = []
    layout: Literal["list", "tables", "table"] = "tables"
    diagram: Ident | None = None


class Callers(Spec, kw_only=True):
    """Who calls each of ``targets`` (members of ``class``): ``layout = "sites"`` lists every
    call site within ``scope`` with its condition; ``"readers"`` every calling line from the
    call graph."""

    targets: Names
    class_: Name | None = msgspec.field(default=None, name="class")
    scope: Names = []
    layout: Literal["sites", "readers"] = "sites"


class Symbols(Spec, kw_only=True):
    """``symbols`` with their docstring summary; ``layout = "detail"`` adds a heading, callers
    and calls for each."""

    symbols: Names
    layout: Literal["list", "detail"] = "list"


class Caveats(Spec, kw_only=True):
    """The ``.. note::`` and ``.. warning::`` blocks of the docstrings of ``symbols``."""

    symbols: Names


class Subclasses(Spec, kw_only=True):
    """Subclasses of ``class`` that override ``method`` or still use one of ``former_names``."""

    class_: Name = msgspec.field(name="class")
    method: Name
    former_names: Names = []


class Inventory(Spec, kw_only=True):
    """Private helpers: of ``class`` (every private method, docstring status and callers), or in
    ``scope`` (those without a docstring, ranked by callers, at most ``limit``)."""

    class_: Name | None = msgspec.field(default=None, name="class")
    scope: Names = []
    limit: Annotated[int, msgspec.Meta(ge=1, le=100_000)] | None = None


class Helpers(Inventory, kw_only=True):
    """An inventory (same parameters) whose rows also say what each helper does: its docstring's
    first line, or the attributes it sets, the calls it makes and what it returns."""


class Glossary(Spec, kw_only=True):
    """The profile's glossary: each term with its symbols' use and its keys' writers and readers."""


class Symptoms(Spec, kw_only=True):
    """The profile's symptoms: cause, symbols and keys to inspect, internals sections to read."""


class Claims(Spec, kw_only=True):
    """The profile's claims of ``group`` (``rlmap.pages.claims``) as a table: the claim's ``row``
    cells under ``columns``, then what it says and the line that decides it (or the test that runs it)."""

    group: Ident
    columns: list[Label] = []


class KeyUse(Spec, kw_only=True):
    """For each of ``classes``, the keys its ``members`` read and write: literal keys, and keys
    named through the attribute ``through`` (``self.tensor_keys.reward``), resolved to the
    defaults declared on the nested class ``defaults`` (``_AcceptedKeys``)."""

    classes: Names
    members: Names = msgspec.field(default_factory=lambda: ["forward"])
    through: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,80}$")] = "tensor_keys"
    defaults: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,80}$")] = "_AcceptedKeys"


class Link(msgspec.Struct, forbid_unknown_fields=True):
    """A related page: ``doc`` a Sphinx document name (``/reference/data_layout`` is from the docs
    root, so it holds wherever the generated pages are placed), ``url`` for Markdown."""

    title: Title
    doc: Annotated[str, msgspec.Meta(pattern=r"^/?[A-Za-z0-9_][A-Za-z0-9_/.-]{0,200}$")] | None = None
    url: Annotated[str, msgspec.Meta(pattern=r"^https://[^\s<>`]+$", max_length=500)] | None = None


class Contents(Spec, kw_only=True):
    """Every listed page of the profile with its summary (and a hidden toctree), then ``related`` links."""

    related: list[Link] = []


# ``kind = "..."`` -> the schema of that section's table
SECTION_SPECS: dict[str, type[Spec]] = {
    "flow": Flow,
    "callees": Callees,
    "calls": Calls,
    "quotes": Quotes,
    "dispatch": Dispatch,
    "returns": Returns,
    "accesses": Accesses,
    "keys": Keys,
    "callers": Callers,
    "symbols": Symbols,
    "caveats": Caveats,
    "subclasses": Subclasses,
    "inventory": Inventory,
    "glossary": Glossary,
    "symptoms": Symptoms,
    "contents": Contents,
    "claims": Claims,
    "key_use": KeyUse,
    "helpers": Helpers,
    "prose": ProseOnly,
}


def shown_words(spec: Spec) -> list[tuple[str, str]]:
    """The words a section shows as the profile wrote them, with their field: its title, and its
    phases', configurations', columns' and links' names (each checked for markup on load, as
    curated text is)."""
    found: list[tuple[str, str]] = [("title", spec.title)] if spec.title else []
    for phase in getattr(spec, "phases", ()):
        found.append(("phases.name", phase.name))
    for configuration in getattr(spec, "configurations", ()):
        found += [("configurations.name", configuration.name), ("configurations.summary", configuration.summary)]
    found += [("columns", column) for column in getattr(spec, "columns", ())]
    found += [("related.title", link.title) for link in getattr(spec, "related", ())]
    return found
