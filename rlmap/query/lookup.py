"""Answer ``rlmap show NAME``: find symbols and tensordict keys by full or suffix name.

``describe(model, query)`` returns a JSON-ready dict; ``format_description`` turns it into the
text the CLI prints.  Neither prints.
"""

from __future__ import annotations

import ast
import re
import shlex
import textwrap
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from rlmap.errors import SymbolNotFound, UsageError, did_you_mean
from rlmap.index.records import ATTRIBUTE, CLASS, MODULE, ON_COPY, VARIABLE, Symbol, format_key
from rlmap.model.codemodel import EXTERNAL, CodeModel
from rlmap.model.mro import mro
from rlmap.model.target import CERTAIN
from rlmap.query.guards import readable_guards
from rlmap.terminal import clipped, inert

if TYPE_CHECKING:
    from rlmap.pages.curated import Term


def find_symbols(model: CodeModel, query: str) -> list[str]:
    """The qualname ``query`` is, or the symbol it reaches as an import path
    (:meth:`CodeModel.follow`: ``torchrl.collectors.Collector``, and an inherited member,
    ``torchrl.envs.TransformedEnv.rollout``); else the qualnames ending with ``.query`` and, for
    ``Owner.member``, the definitions of ``member`` the classes ending with ``.Owner`` inherit
    (``TransformedEnv.rollout`` is ``EnvBase.rollout``); sorted."""
    found, exact = _named(model, query)
    if exact:
        return found
    # (and what other classes of that name inherit: two ``Child`` classes, one defining ``stop``
    # and one inheriting it, make ``Child.stop`` ambiguous)
    return sorted({*found, *(reached for _, reached in inherited(model, query))})


def _named(model: CodeModel, query: str) -> tuple[list[str], bool]:
    """The symbols ``query`` names, and whether it names one exactly: itself, or the symbol it
    reaches as an import path (:meth:`CodeModel.follow`); else the qualnames ending with
    ``.query``, sorted (no inherited member: a class is not reached through one)."""
    query = query.strip()
    if model.has_symbol(query):
        return [query], True
    followed = model.follow(query)
    if followed is not None:
        return [followed], True
    return model.qualnames_ending("." + query), False


def inherited(model: CodeModel, query: str) -> list[tuple[str, str]]:
    """For ``Owner.member`` (``Owner`` as :func:`_named` finds it, a class), each class that does
    not define ``member`` and the definition it inherits (:meth:`CodeModel.member_of`: the first
    class of its method resolution order that defines it)."""
    owner_query, _, name = query.strip().rpartition(".")
    if not owner_query or not name:
        return []
    found = []
    for owner in _named(model, owner_query)[0]:
        if model.node_kind(owner) == CLASS and not model.has_symbol(f"{owner}.{name}"):
            reached = model.member_of(owner, name)
            if reached is not None:
                found.append((owner, reached))
    return found


def parse_key(query: str) -> tuple[str, ...] | None:
    """``is_init``, ``collector.traj_ids`` or ``("collector", "traj_ids")`` -> a key tuple."""
    text = query.strip()
    if text.startswith("("):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return None
        if isinstance(value, tuple) and value and all(isinstance(part, str) for part in value):
            return value
        return None
    if not text:
        return None
    return tuple(text.split(".")) if "." in text else (text,)


def find_key(model: CodeModel, query: str) -> tuple[str, ...] | None:
    key = parse_key(query)
    if key is not None and model.key_accesses(key):
        return key
    if key is not None and len(key) > 1 and model.key_accesses((query.strip(),)):
        return (query.strip(),)  # a flat key that happens to contain a dot
    return None


def find_term(terms: Sequence[Term], query: str) -> Term | None:
    """The glossary term whose name, alias or former name is ``query`` (any case)."""
    folded = query.strip().lower()
    return next((term for term in terms if folded in (name.lower() for name in term.names())), None)


def describe_term(model: CodeModel, term: Term) -> dict[str, Any]:
    symbols = []
    for name in term.symbols:
        found = find_symbols(model, name)
        symbol = model.symbol(found[0]) if len(found) == 1 else None
        if symbol is not None:
            symbols.append(
                {"qualname": symbol.qualname, "kind": symbol.kind, **_anchor(model, symbol.path, symbol.line)}
            )
        else:
            symbols.append(
                {"qualname": name, "kind": "missing", "path": "", "line": 0, "location": "", "permalink": ""}
            )
    return {
        "term": term.term,
        "kind": "glossary term",
        "definition": term.definition,
        "aliases": list(term.aliases),
        "former": list(term.former),
        "symbols": symbols,
        "keys": [format_key(key) for key in term.keys],
    }


def describe(model: CodeModel, query: str, terms: Sequence[Term] = ()) -> dict[str, Any]:
    """Everything ``rlmap show`` says about ``query``: code, key and glossary term."""
    if not query.strip():
        raise UsageError(
            "the name to show is empty", "pass a symbol such as Collector.rollout or a key such as is_init"
        )
    result = _describe_code(model, query)
    term = find_term(terms, query)
    if term is not None:
        if result is None:
            result = {"query": query, **describe_term(model, term)}
        else:
            result["glossary"] = describe_term(model, term)
    if result is None:
        result = describe_external(model, query)
    if result is None:
        problem = location_problem(model, query)  # (no name is spelled like a path)
        if problem is not None:
            raise problem
    if result is None:
        close = similar_names(model, query, terms=terms) or similar_keys(model, query)
        raise SymbolNotFound(
            f"'{_echoed(query)}' is neither a symbol, a tensordict key nor a glossary term of {model.source.stamp()}",
            did_you_mean(close)
            if close
            else "check the spelling, or search with a shorter suffix of the name (its last part alone)"
            + ("" if terms or model.tensordict_keys() else "; keys and glossary terms are read under a profile only"),
            tuple(close),
        )
    return result


def completions(
    model: CodeModel, incomplete: str, limit: int = 200, keys_only: bool = False, terms: Sequence[Term] = ()
) -> list[str]:
    """Names that complete ``incomplete``: full qualified names, or suffixes of as many parts
    (``Collector.ro`` -> ``Collector.rollout``), tensordict keys (``collector.traj_ids``) and
    glossary terms; only the keys with ``keys_only``; sorted, at most ``limit``."""
    depth = incomplete.count(".") + 1
    found = {text for text in (".".join(key) for key in model.tensordict_keys()) if text.startswith(incomplete)}
    if keys_only:
        return sorted(found)[:limit]
    # a glossary term (one word: a shell would split the others into two arguments)
    found.update(name for term in terms for name in term.names() if name.startswith(incomplete) and " " not in name)
    head, _, last = incomplete.rpartition(".")
    owner = _owner(model, head)
    if owner is not None:  # a member, inherited ones too, also through a path a module's import makes
        found.update(f"{head}.{member}" for member in _members(model, owner) if member.startswith(last))
    for name in model.qualnames():
        suffix = ".".join(name.split(".")[-depth:])
        for candidate in (name, suffix):
            if candidate.startswith(incomplete):
                found.add(candidate)
    if depth > 1:  # a path a module's import makes (``torchrl.collectors.Collector``)
        found.update(
            path for path in (f"{module}.{name}" for module, name, _ in model.exports()) if path.startswith(incomplete)
        )
    return sorted(found)[:limit]


def similar_names(model: CodeModel, query: str, count: int = 3, terms: Sequence[Term] = ()) -> list[str]:
    """Names spelled like ``query`` (``Colector.rollout`` -> ``Collector.rollout``), as short as
    the query: symbols, the paths imports make, glossary ``terms`` (their names); a member keeps
    its name when only its owner is misspelled (``torchrl.collector.Collector.rollout``).  A name
    with a leading underscore comes after the others unless the query has one."""
    import difflib

    query = query.strip()
    depth = query.count(".") + 1
    if depth > _DEEPEST or len(query) > _LONGEST:  # no name of a package is spelled like it
        return []
    suffixes = {".".join(name.split(".")[-depth:]) for name in model.qualnames()}
    found: list[str] = []  # the member of a misspelled owner's spellings
    if depth > 1:  # and the paths a module's imports make (``torchrl.collectors.Collector``), whole
        suffixes.update(f"{module}.{name}" for module, name, _ in model.exports())
        head, _, last = query.rpartition(".")
        # a member, inherited ones too, also through an import path (``torchrl.envs.TransformedEnv.rand_actoin``)
        owner = _owner(model, head)
        if owner is not None:
            close = difflib.get_close_matches(last, _members(model, owner), n=count, cutoff=0.8)
            if close:
                return _public_first([f"{head}.{member}" for member in close], query)
        else:  # the owner misspelled: its spellings that have the member
            for meant in similar_names(model, head, count):
                owner = _owner(model, meant)
                if owner is not None and last in _members(model, owner):
                    found.append(f"{meant}.{last}")
    suffixes.update(name for term in terms for name in term.names() if name.count(".") + 1 == depth)
    close = difflib.get_close_matches(query, sorted(suffixes), n=count * 3, cutoff=0.8)
    if not _dunder(query):  # (a module's ``__all__`` is no answer to a misspelled name)
        close = [name for name in close if not _dunder(name)]
    if found:  # then the names as long as the query: not its owner alone (the member dropped)
        close = [name for name in close if name.count(".") + 1 == depth and name not in found]
    if not found and not close and depth == 1:  # an old class name (``SyncDataCollector``): by its words
        close = _sharing_words(suffixes, query, count)
    return [*found, *_public_first(close, query)][:count]


# A name of more parts or characters than these is spelled like none: no suggestion is looked for
# (each part of a misspelled owner is looked for in turn: 1,000 parts ran out of recursion).
_DEEPEST = 12
_LONGEST = 1000

_CAMEL_WORD = re.compile(r"[A-Z][a-z0-9]*|[a-z0-9]+")


def _sharing_words(names: set[str], query: str, count: int) -> list[str]:
    """The CapWords names that end with the same word as ``query``, those with the fewest words
    of their own first, then those sharing the most of its others (``SyncDataCollector``:
    ``Collector``, then ``DistributedSyncCollector`` and ``MultiSyncCollector``); none for a query
    that is not CapWords of two words or more."""
    words = _CAMEL_WORD.findall(query)
    if len(words) < 2 or not query[:1].isupper() or "".join(words) != query:
        return []
    scored = []
    for name in names:
        theirs = _CAMEL_WORD.findall(name)
        if not name[:1].isupper() or not theirs or theirs[-1] != words[-1] or "".join(theirs) != name:
            continue
        shared = len(set(theirs) & set(words))
        scored.append((len(set(theirs) - set(words)), -shared, name))
    return [name for _, _, name in sorted(scored)[:count]]


def _dunder(name: str) -> bool:
    last = name.rpartition(".")[2]
    return last.startswith("__") and last.endswith("__")


def _public_first(names: list[str], query: str) -> list[str]:
    """``names`` in their order, those whose last part starts with ``_`` last unless ``query``'s does."""
    if query.rpartition(".")[2].startswith("_"):
        return names
    return sorted(names, key=lambda name: name.rpartition(".")[2].startswith("_"))


def _owner(model: CodeModel, head: str) -> str | None:
    """The one symbol ``head`` names (:func:`find_symbols`), or ``None``."""
    found = find_symbols(model, head) if head else []
    return found[0] if len(found) == 1 else None


def _members(model: CodeModel, owner: str) -> list[str]:
    """The names defined in ``owner`` (a module's, a class's), and those a class inherits from its
    bases in the package, sorted."""
    owners = set(mro(model.bases, owner))
    found = set()
    for name in model.qualnames():
        head, _, last = name.rpartition(".")
        if head in owners:
            found.add(last)
    return sorted(found)


def similar_keys(model: CodeModel, query: str, count: int = 3) -> list[str]:
    """Tensordict keys spelled like ``query`` (``is_int`` -> ``is_init``), as ``show`` takes them."""
    import difflib

    written = sorted({".".join(key) for key in model.tensordict_keys()})  # (collector.traj_ids)
    return difflib.get_close_matches(query.strip(), written, n=count, cutoff=0.8)


# A location as rlmap prints it, ``torchrl/collectors/_single.py:2030`` (or a file alone), as a
# compiler or linter does (``path:line:column:``), or as a traceback does (``File "path", line
# 2030, in rollout``); the path may be the installed file's, absolute.
_LOCATION = re.compile(r"(?P<path>[^\s:\"]+\.py)(?::(?P<line>[0-9]{1,9})(?::[0-9]{1,9})?:?)?")
_TRACEBACK = re.compile(r'(?:File )?"(?P<path>[^"]+\.py)", line (?P<line>[0-9]{1,9})(?:, in \S+)?')


def _location(query: str) -> tuple[str, str | None] | None:
    """The path (``/``-separated, no ``./``) and line a location gives; ``None`` for no location."""
    text = query.strip()
    found = _LOCATION.fullmatch(text) or _TRACEBACK.fullmatch(text)
    if found is None:
        return None
    return found.group("path").replace("\\", "/").removeprefix("./"), found.group("line")


def _modules_by_path(model: CodeModel) -> dict[str, Symbol]:
    return {symbol.path: symbol for symbol in model.all_symbols() if symbol.kind == MODULE}


def _indexed_path(paths: Collection[str], path: str) -> str | None:
    """The indexed file ``path`` names: itself, the longest indexed path it ends with (an
    installed file's absolute path, as a traceback prints it, ends with the path rlmap prints),
    or the one indexed path that ends with it (``collectors/_single.py``)."""
    if path in paths:
        return path
    ends = [known for known in paths if path.endswith("/" + known)]
    if ends:
        return max(ends, key=len)
    tails = _ending_with(paths, path)
    return tails[0] if len(tails) == 1 else None


def _ending_with(paths: Collection[str], path: str) -> list[str]:
    return sorted(known for known in paths if known.endswith("/" + path))


def located(model: CodeModel, query: str) -> tuple[str, str] | None:
    """The symbol a location names, and the location as rlmap writes it (relative to the tree's
    root): at ``path:line``, the innermost definition whose lines hold that line (the module when
    none does); a file alone, its module.  ``None`` when ``query`` is no location or names no
    indexed file (or a line past the file's end): see :func:`location_problem`."""
    found = _location(query)
    if found is None:
        return None
    modules = _modules_by_path(model)
    path = _indexed_path(modules, found[0])
    if path is None:
        return None
    module, line = modules[path], found[1]
    if line is None:
        return module.qualname, path
    number = int(line)
    if not 1 <= number <= module.end_line:
        return None
    held = [symbol for symbol in model.all_symbols() if symbol.path == path]
    around = [symbol for symbol in held if symbol.kind != MODULE and symbol.line <= number <= symbol.end_line]
    innermost = min(
        around, key=lambda symbol: (symbol.end_line - symbol.line, -symbol.line, symbol.qualname), default=module
    )
    return innermost.qualname, f"{path}:{line}"


def location_problem(model: CodeModel, query: str) -> SymbolNotFound | None:
    """Why a location names nothing (``None`` when ``query`` is no location): a file the tree
    does not hold (with the indexed files spelled like it), or a line past the file's end."""
    import difflib

    found = _location(query)
    if found is None:
        return None
    modules = _modules_by_path(model)
    path = _indexed_path(modules, found[0])
    if path is not None:  # (the file is there: the line is past its end)
        return SymbolNotFound(
            f"'{_echoed(query)}' is past the end of {path}, which has {modules[path].end_line} lines",
            "give a line of the file, or the file alone for its module",
        )
    line = f":{found[1]}" if found[1] else ""
    package = model.source.package + "/"
    endings = sorted(_ending_with(modules, found[0]), key=lambda known: (not known.startswith(package), known))
    if endings:  # ``utils.py``: the end of several files' paths
        return SymbolNotFound(
            f"'{_echoed(query)}' is the end of {len(endings)} files' paths in {model.source.stamp()}",
            f"give more of the path: {', '.join(repr(known + line) for known in endings[:3])}"
            + (f" or {len(endings) - 3} more" if len(endings) > 3 else ""),
            tuple(known + line for known in endings),
        )
    # each indexed file against as many of the path's last parts (an absolute path's tail)
    parts = found[0].split("/")
    scored = []
    for known in modules:
        matcher = difflib.SequenceMatcher(None, "/".join(parts[-known.count("/") - 1 :]), known)
        if matcher.real_quick_ratio() >= 0.8 and matcher.quick_ratio() >= 0.8 and matcher.ratio() >= 0.8:
            scored.append((-matcher.ratio(), known))
    close = [known for _, known in sorted(scored)[:3]]
    return SymbolNotFound(
        f"'{_echoed(query)}' is no file of {model.source.stamp()}",
        did_you_mean([name + line for name in close])
        if close
        else "give a file of the analysed tree, as rlmap prints it (PATH:LINE, the path relative to the "
        "tree's root) or as a traceback does, or the file alone for its module",
        tuple(name + line for name in close),
    )


def _describe_code(model: CodeModel, query: str) -> dict[str, Any] | None:
    place = located(model, query)
    if place is not None:
        result = describe_symbol(model, place[0])
        result["query"] = query
        result["located"] = place[1]
        return result
    package = model.source.package + "."
    # the documented package's symbols first (torchrl's before tensordict's), each side sorted
    matches = sorted(find_symbols(model, query), key=lambda name: not name.startswith(package))
    key = find_key(model, query)
    if key and matches and matches != [query.strip()]:
        # A bare name that is a key and the suffix of some symbols: keys are what people
        # type bare (``is_init``); the symbols are listed for a second query.
        result = describe_key(model, key)
        result["query"] = query
        result["also_symbols"] = [_candidate(model, name) for name in matches]
        return result
    if len(matches) > 1:
        heirs: dict[str, list[str]] = {}
        for owner, reached in inherited(model, query):
            heirs.setdefault(reached, []).append(owner)
        return {
            "query": query,
            "ambiguous": [{**_candidate(model, name), "inherited_by": heirs.get(name, [])} for name in matches],
            "key": describe_key(model, key) if key else None,
        }
    if matches:
        result = describe_symbol(model, matches[0])
        result["query"] = query
        owner = _inheriting(model, query, matches[0])
        if owner:
            result["inherited_by"] = owner
        if key:
            result["also_key"] = format_key(key)
        return result
    if key:
        result = describe_key(model, key)
        result["query"] = query
        return result
    return None


def _inheriting(model: CodeModel, query: str, qualname: str) -> str:
    """The class ``query`` (``TransformedEnv.rollout``) named, when ``qualname`` is the member it
    inherits rather than defines (``EnvBase.rollout``); ``""`` otherwise (several such classes:
    the first, sorted)."""
    query = query.strip()
    if qualname == query or qualname.endswith("." + query):
        return ""
    return next((owner for owner, reached in inherited(model, query) if reached == qualname), "")


def _candidate(model: CodeModel, qualname: str) -> dict[str, Any]:
    symbol = model.symbol(qualname)
    assert symbol is not None
    return {"qualname": qualname, "kind": symbol.kind, "anchor": _anchor(model, symbol.path, symbol.line)}


def _anchor(model: CodeModel, path: str, line: int) -> dict[str, Any]:
    return {"path": path, "line": line, "location": f"{path}:{line}", "permalink": model.source.permalink(path, line)}


def describe_symbol(model: CodeModel, qualname: str) -> dict[str, Any]:
    symbol = model.symbol(qualname)
    assert symbol is not None
    result: dict[str, Any] = {
        "qualname": qualname,
        "kind": symbol.kind,
        "definition": _anchor(model, symbol.path, symbol.line),
        "end_line": symbol.end_line,
        "documented": symbol.has_docstring,
        "docstring": symbol.doc_first_line,
    }
    if symbol.signature:
        result["signature"] = symbol.signature
    if symbol.decorators:
        result["decorators"] = list(symbol.decorators)
    if symbol.kind == CLASS:
        result["bases"] = list(model.bases.get(qualname, symbol.bases))
        result["subclasses"] = list(model.subclasses.get(qualname, ()))
        members = sorted(_children(model, qualname), key=lambda member: member.line)
        result["members"] = _member_rows(qualname, members)
        result["constructed_by"] = [_caller(model, edge) for edge in model.callers(qualname + ".__init__")]
    if symbol.kind == MODULE:
        _describe_module(model, qualname, result)
    if symbol.value:
        result["value"] = symbol.value
    if symbol.kind not in (MODULE, CLASS):
        result["callers"] = [_caller(model, edge) for edge in model.callers(qualname)]
    result["callees"] = [
        {
            "callee": edge.callee,
            "lines": list(edge.lines),
            "permalink": model.source.permalink(symbol.path, edge.lines[0]) if edge.lines else "",
            "how": list(edge.how),
            "certain": all(how in CERTAIN for how in edge.how),
            "kind": model.node_kind(edge.callee),
        }
        for edge in model.callees(qualname)
    ]
    accesses = model.attribute_accesses(qualname)
    if accesses or symbol.kind == ATTRIBUTE:
        result["accesses"] = [
            {
                "kind": access.kind,
                "function": access.function,
                "line": access.line,
                "location": f"{model.path_of(access.function)}:{access.line}",
                "permalink": model.source.permalink(model.path_of(access.function), access.line),
                "guards": list(access.guards),
                "value": access.value,
            }
            for access in sorted(accesses, key=lambda a: (a.kind != "write", a.line, a.function))
        ]
    return result


def _describe_module(model: CodeModel, qualname: str, result: dict[str, Any]) -> None:
    """What a module holds: the classes, functions and variables it defines (``members``, by
    line), the modules under it (``submodules``), and the symbols of its own package it binds by
    import (``imports``: an ``__init__``'s public names, ``EnvBase`` from ``torchrl.envs.common``)."""
    children = _children(model, qualname)
    defined = sorted((member for member in children if member.kind != MODULE), key=lambda m: (m.line, m.qualname))
    result["members"] = _member_rows(qualname, defined)
    result["submodules"] = sorted(member.qualname for member in children if member.kind == MODULE)
    package = qualname.split(".", 1)[0] + "."  # (not a companion's: tensordict's set_lazy_legacy in torchrl)
    result["imports"] = [
        {"name": name, "target": target, "kind": model.node_kind(target)}
        for owner, name, target in sorted(model.exports(), key=lambda row: (row[1], row[2]))
        if owner == qualname and target.startswith(package)
    ]


def _children(model: CodeModel, qualname: str) -> list[Symbol]:
    """The symbols defined directly in a class or module (not in their members)."""
    prefix = qualname + "."
    found = (model.symbol(name) for name in model.qualnames() if name.startswith(prefix))
    return [member for member in found if member is not None and "." not in member.qualname[len(prefix) :]]


def _member_rows(qualname: str, members: Sequence[Symbol]) -> list[dict[str, Any]]:
    """A class's or module's members as ``show`` reports them: name (relative), kind, line, docstring."""
    cut = len(qualname) + 1
    return [{"name": m.qualname[cut:], "kind": m.kind, "line": m.line, "documented": m.has_docstring} for m in members]


def _caller(model: CodeModel, edge: Any) -> dict[str, Any]:
    """A caller of the symbol: where (its file, the call lines there) and how."""
    path = model.path_of(edge.caller)
    return {
        "caller": edge.caller,
        "path": path,
        "lines": list(edge.lines),
        "permalink": model.source.permalink(path, edge.lines[0]) if edge.lines and path else "",
        "how": list(edge.how),
    }


def describe_external(model: CodeModel, query: str) -> dict[str, Any] | None:
    """A name outside the analysed packages that their code calls (``torch.stack``,
    ``builtins.range``: a callee ``show`` lists as ``[external]``): its callers; ``None`` for any
    other name."""
    name = query.strip()
    if model.node_kind(name) != EXTERNAL:
        return None
    return {
        "query": query,
        "qualname": name,
        "kind": EXTERNAL,
        "definition": {"path": "", "location": "", "permalink": ""},
        # the documented package's callers first (torchrl's before tensordict's)
        "callers": sorted(
            (_caller(model, edge) for edge in model.callers(name)),
            key=lambda row: (not row["caller"].startswith(model.source.package + "."), row["caller"]),
        ),
    }


def describe_key(model: CodeModel, key: tuple[str, ...]) -> dict[str, Any]:
    accesses = model.key_accesses(key)
    return {
        "key": format_key(key),
        "kind": "tensordict key",
        "accesses": [
            {
                "kind": access.kind,
                "how": access.how,
                "function": access.function,
                "line": access.line,
                "location": f"{model.path_of(access.function)}:{access.line}",
                "permalink": model.source.permalink(model.path_of(access.function), access.line),
                "guards": list(access.guards),
                "via": access.expression,
                "receiver": access.receiver,
            }
            for access in accesses
        ],
    }


def _format_term(result: dict[str, Any], link: Link | None = None, width: int = 0, shown_key: str = "") -> str:
    """A glossary term: its definition wrapped (to the terminal, at most 96 columns), the code it
    is about in aligned rows, each location a hyperlink where the terminal shows them, else
    followed by its permalink.  ``shown_key``: the key whose report follows the term (the name
    asked is a key too), which its keys line then says is or is not one of the term's."""
    link = link or _plain_link
    names = [*result["aliases"], *(f"{n} (former name)" for n in result["former"])]
    lines = [f"{result['term']}  (glossary term{'; also ' + ', '.join(names) if names else ''})"]
    wrap = min(96, width - 2) if width > 26 else 96
    from rlmap.render.formatters import LITERAL  # (a glossary's words only: not on every show's path)

    # (a definition marks code as rst and Markdown both read it, ``x``; a terminal reads `x`)
    definition = LITERAL.sub(lambda found: f"`{found.group()[2:-2]}`", result["definition"])
    lines.extend(f"  {line}" for line in textwrap.wrap(definition, wrap, break_long_words=False))
    if result["symbols"]:
        lines.append("")
        lines.append("code:")
        rows: list[tuple[str, ...]] = []
        for symbol in result["symbols"]:
            where, url = symbol["location"] or "no longer in the code", symbol["permalink"]
            if url and link is not _plain_link:
                rows.append((symbol["qualname"], link(where, url)))
            else:
                rows.append((symbol["qualname"], where, url) if url else (symbol["qualname"], where))
        lines.extend(_table(rows, caps=(60, 40), width=width))
    if result["keys"]:
        lines.append("")
        if shown_key in result["keys"]:
            hint = (
                "(writers and readers below)"
                if len(result["keys"]) == 1
                else f"({shown_key}'s writers and readers below)"
            )
        elif shown_key:
            hint = f"(below: the key {shown_key}, not one of these; rlmap show --key KEY for these)"
        else:
            key = result["keys"][0]
            hint = (
                f"(rlmap show --key {shlex.quote(key)} for writers and readers)"
                if len(result["keys"]) == 1
                else "(rlmap show --key KEY for writers and readers)"
            )
        lines.append("keys: " + ", ".join(result["keys"]) + "  " + hint)
    return "\n".join(lines)


Link = Callable[[str, str], str]  # (text, url) -> the text as a terminal hyperlink


def _plain_link(text: str, url: str) -> str:
    del url
    return text


def format_description(result: dict[str, Any], link: Link | None = None, width: int = 0) -> str:
    """Human-readable text for a :func:`describe` result.

    Names in the symbol's own module are shown relative to it (``Collector._sync`` for
    ``torchrl.collectors._single.Collector._sync``); rows are aligned in columns; an access
    written twice on one line is one row; guards read as conditions (``x``, not
    ``not (not x)``).  ``link`` turns ``path:line`` locations into terminal hyperlinks.
    ``width`` (a terminal's columns; 0: none) wraps a row's last column (guards, flags) under
    itself instead of letting the terminal fold the row at its left edge.
    """
    if result.get("kind") == "glossary term":
        return _format_term(result, link, width)
    if result.get("glossary"):
        rest = {name: value for name, value in result.items() if name != "glossary"}
        if "ambiguous" in rest:  # the term answers; the symbols are for a second query
            return _format_term(result["glossary"], link, width) + "\n\n" + _format_ambiguous(rest, width, also=True)
        shown = rest["key"] if rest.get("kind") == "tensordict key" else ""
        term = _format_term(result["glossary"], link, width, shown)
        return term + "\n\n" + format_description(rest, link, width)
    if "ambiguous" in result:
        return _format_ambiguous(result, width)
    if result.get("kind") == "tensordict key":
        return _format_key(result, width, link)
    report = _Report(result, link or _plain_link, width)
    if result.get("kind") == EXTERNAL:  # (see describe_external)
        lines = [f"{result['qualname']}  (outside the analysed code: its calls are read, not its definition)"]
        return "\n".join([*lines, "", *report.callers()])
    lines = report.header()
    sections = (report.accesses, report.members, report.submodules, report.imports)
    for section in (*sections, report.constructed_by, report.callers, report.callees):
        body = section()
        if body:
            lines.extend(["", *body])
    if result.get("also_key"):
        lines.append("")
        lines.append(f"'{result['query']}' is also a tensordict key: rlmap show '{result['also_key']}' --key")
    return "\n".join(lines)


def _format_ambiguous(result: dict[str, Any], width: int = 0, also: bool = False) -> str:
    """The symbols a name matches; ``also``: beside the glossary term it names, which answers."""
    lines = [f"'{result['query']}' {'also ' if also else ''}matches {len(result['ambiguous'])} symbols:"]
    candidates = result["ambiguous"]
    shown = candidates if len(candidates) <= _LISTED + _LISTED // 4 else candidates[:_LISTED]
    rows = [
        (
            c["qualname"],
            f"({c['kind']}, {c['anchor']['location']})"
            + (f" inherited by {', '.join(c['inherited_by'])}" if c.get("inherited_by") else ""),
        )
        for c in shown
    ]
    lines.extend(_table(rows, width=width))
    if len(shown) < len(candidates):
        lines.append(f"  ... and {len(candidates) - len(shown)} more (every one of them: --json)")
    if also:  # (otherwise the error that follows the list says it)
        lines.append("To show one of them, pass a longer suffix or its full qualified name.")
    if result.get("key"):
        lines.append("")
        lines.append(format_description(result["key"], width=width))
    return "\n".join(lines)


def _table(rows: Sequence[Sequence[str]], caps: Sequence[int] = (), indent: str = "  ", width: int = 0) -> list[str]:
    """Rows as aligned columns (the last one free); a column is as wide as its widest cell, at most
    its cap (``caps``, else 60): a longer cell pushes the rest of its row only.  Into a pipe (no
    ``width``), a column wider than its cap holds 19 cells in 20 of it (up to
    :data:`_PIPED_CAP`): a few long cells push their rows, the rest stay in line.  On a terminal
    (``width``) wide enough for every column at its widest cell and a last one of
    :data:`_NARROWEST_CELL`, no column is capped; a row longer than ``width`` is fitted to it
    (:func:`_fitted`)."""
    if not rows:
        return []
    count = max(len(row) for row in rows)
    lengths = [sorted(len(row[i]) for row in rows if i < len(row)) for i in range(count - 1)]
    widest = [found[-1] if found else 0 for found in lengths]
    caps = [*caps, *[60] * count]
    # on a terminal, a column may be as wide as nine cells in ten of it (the longest of the rest
    # push their own row), when the terminal has room for that
    nine_in_ten = [found[(len(found) * 9 + 9) // 10 - 1] if found else 0 for found in lengths]  # (rounded up)
    roomy = [min(widest[i], max(caps[i], nine_in_ten[i])) for i in range(count - 1)]
    if not width:  # into a pipe or a file rows are whole: a column holds 19 cells in 20 of it
        most = [found[(len(found) * 19 + 19) // 20 - 1] if found else 0 for found in lengths]  # (rounded up)
        caps = [min(_PIPED_CAP, max(caps[i], most[i])) for i in range(count - 1)]
    elif len(indent) + sum(roomy) + 2 * (count - 1) + _NARROWEST_CELL <= width:
        caps = roomy
    else:  # on a narrow terminal no column takes more than half of it
        caps = [min(cap, max(16, (width - len(indent)) // 2)) for cap in caps]
    widths = [min(caps[i], widest[i]) for i in range(count - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
        line = (indent + "  ".join(cells)).rstrip()
        lines.extend(_fitted(cells, width, indent) if width and len(line) > width and len(cells) > 1 else [line])
    return lines


# An ambiguous name lists this many symbols (a quarter more are listed rather than said "more").
_LISTED = 20
# A key's report names this many of the symbols its name is also the suffix of.
_ALSO = 4


def _unique_suffix(qualname: str, namesakes: Sequence[str]) -> str:
    """The shortest suffix of ``qualname``, of two names or more, that no other of ``namesakes``
    (the symbols of its last name) ends with: ``A2CLoss._AcceptedKeys.action`` where 22 classes
    have an ``_AcceptedKeys.action``."""
    parts = qualname.split(".")
    for size in range(2, len(parts)):
        suffix = ".".join(parts[-size:])
        if not any(other != qualname and (other == suffix or other.endswith("." + suffix)) for other in namesakes):
            return suffix
    return qualname


# Below this many columns left for the cells that did not fit, they go on lines of their own.
_NARROWEST_CELL = 24
# Into a pipe no column is wider than this: a longer cell pushes its row only.
_PIPED_CAP = 100


def _fitted(cells: list[str], width: int, indent: str) -> list[str]:
    """A row longer than ``width``: the leading cells that fit (the first always), then the others
    on the same line when enough room is left, else wrapped on lines of their own, under the
    second column (or indented under the row when that is too far right)."""
    keep = len(cells) - 1
    while keep > 1 and len((indent + "  ".join(cells[:keep])).rstrip()) > width:
        keep -= 1
    head = indent + "  ".join(cells[:keep]) + "  "
    rest = "  ".join(cell.strip() for cell in cells[keep:] if cell.strip())
    if keep == len(cells) - 1 and width - len(head) >= _NARROWEST_CELL:
        start, lines = len(head), []
    else:
        start = len(indent) + len(cells[0]) + 2 if keep > 1 else len(indent) + 4
        if width - start < _NARROWEST_CELL:
            start = len(indent) + 4
        lines, head = [head.rstrip()], " " * start
    # a name is never cut (a line may be longer than the terminal where a name is)
    pieces = textwrap.wrap(rest, max(width - start, _NARROWEST_CELL), break_long_words=False, break_on_hyphens=False)
    pieces = pieces or [""]
    lines.append(head + pieces[0])
    lines.extend(" " * start + piece for piece in pieces[1:])
    return lines


def _linked(lines: list[str], places: Sequence[tuple[str, str]], link: Link) -> list[str]:
    """``lines`` of a table with each row's location (``places``: its text and permalink, in row
    order) made a terminal hyperlink, once the columns are laid out (a link's escape sequences
    take no room on screen: counted, they would push the columns apart)."""
    if link is _plain_link:
        return lines
    import re

    out, at = list(lines), 0
    for text, url in places:
        if not text or not url:
            continue
        cell = re.compile(rf"(?<!\S){re.escape(text)}(?!\S)")  # a whole cell: "line 10" is not in "line 100"
        for number in range(at, len(out)):
            found = cell.search(out[number])
            if found is not None:  # (a cell wrapped over lines is found on none: left unlinked)
                out[number] = out[number][: found.start()] + _each_line(text, url, link) + out[number][found.end() :]
                at = number + 1
                break
    return out


def _each_line(text: str, url: str, link: Link) -> str:
    """A location of several lines (``line 2066, 2132``, ``x.py:533, 535``) with each line a link
    to its own line: the text up to the first comma links to the first (``url``)."""
    import re

    head, comma, rest = text.partition(", ")
    anchored = re.fullmatch(r"(.*#L)\d+", url)
    if not comma or anchored is None or re.fullmatch(r"\d+(?:, \d+)*", rest) is None:
        return link(text, url)
    return ", ".join([link(head, url), *(link(line, anchored.group(1) + line) for line in rest.split(", "))])


class _Report:
    """The text of a symbol's :func:`describe_symbol` result."""

    def __init__(self, result: dict[str, Any], link: Link, width: int = 0) -> None:
        self.result = result
        self.link = link
        self.width = width
        qualname = result["qualname"]
        module = result["definition"]["path"][:-3].replace("/", ".").removesuffix(".__init__")
        self.module = module if module and qualname.startswith(module + ".") else ""

    def name(self, qualname: str) -> str:
        """``qualname`` relative to the symbol's module when it is in it."""
        if self.module and qualname.startswith(self.module + "."):
            return qualname[len(self.module) + 1 :]
        return qualname

    def where(self, location: str) -> str:
        """``path:line``, or ``line N`` in the symbol's own file."""
        path, _, line = location.rpartition(":")
        return f"line {line}" if path == self.result["definition"]["path"] else location

    def lines_in(self, edge: dict[str, Any]) -> str:
        """A caller's call lines: ``line N, M`` in the symbol's own file, else ``path:N, M``."""
        path = edge.get("path", "")
        if not path or path == self.result["definition"]["path"]:
            return f"line {_lines(edge['lines'])}"
        return f"{path}:{_lines(edge['lines'])}"

    def header(self) -> list[str]:
        """The name, kind, definition, signature, docstring, value, bases and subclasses of a symbol."""
        result = self.result
        definition = result["definition"]
        kind = f"{result['kind']} in {self.module}" if self.module else result["kind"]
        location = definition["location"]
        if definition["permalink"]:
            location = self.link(location, definition["permalink"])
        lines = [f"{result['qualname']}  ({kind})", f"  defined at  {location}"]
        if result.get("inherited_by"):
            lines.append(f"  inherited   by {self.name(result['inherited_by'])} (asked as {_echoed(result['query'])})")
        if ":" in result.get("located", "") and result["located"] != definition["location"]:
            where = (
                "no definition holds it: the module's" if result["kind"] == MODULE else "the innermost definition there"
            )
            lines.append(f"  holds       line {result['located'].rpartition(':')[2]} ({where})")
        if definition["permalink"] and self.link is _plain_link:
            lines.append(f"  permalink   {definition['permalink']}")
        if result.get("stands_in_for"):
            lines.append(f"  stand-in    for {result['stands_in_for']}, defined where its import fails")
        if "signature" in result:
            lines.append(f"  signature   {result['signature']}")
        if result["kind"] not in (ATTRIBUTE, VARIABLE):
            doc = f"yes - {result['docstring']}" if result["documented"] else "none"
            lines.append(f"  docstring   {doc}")
        if "value" in result:
            lines.append(f"  value       {result['value']}")
        if result.get("bases"):
            lines.append(f"  bases       {', '.join(map(self.name, result['bases']))}")
        subclasses = result.get("subclasses")
        if subclasses:
            more = " ..." if len(subclasses) > 8 else ""
            lines.append(f"  subclasses  {len(subclasses)}: {', '.join(map(self.name, subclasses[:8]))}{more}")
        if self.module:
            lines.append(f"  (names in {self.module} are shown relative to it)")
        if not self.width:
            return lines
        fitted = []  # on a terminal, a long line goes on under its value, never cutting a word
        for line in lines:
            hang = " " * (14 if line.startswith("  ") and line[2:3] != "(" else 4)
            pieces = textwrap.wrap(line, self.width, subsequent_indent=hang, break_long_words=False)
            wraps = len(line) > self.width and "://" not in line  # (a link is kept on its line, whole)
            fitted.extend(pieces if wraps and pieces else [line])
        return fitted

    def accesses(self) -> list[str]:
        if "accesses" not in self.result:
            return []
        rows: list[tuple[str, ...]] = []
        counts: dict[tuple[str, ...], int] = {}
        links: dict[tuple[str, ...], str] = {}
        for access in self.result["accesses"]:
            value = f"= {access['value']}" if access["value"] and access["kind"] in ("write", "augmented") else ""
            guards = " / ".join(readable_guards(access["guards"]))
            row = (
                access["kind"],
                self.where(access["location"]),
                self.name(access["function"]),
                value,
                f"[{guards}]" if guards else "",
            )
            if row not in counts:
                rows.append(row)
                links[row] = access.get("permalink", "")
            counts[row] = counts.get(row, 0) + 1
        shown = [self._counted(row, counts[row]) for row in rows]
        table = _table(shown, caps=(9, 16, 40), width=self.width)
        places = [(row[1], links[row]) for row in rows]
        return [f"accesses ({len(self.result['accesses'])}):", *_linked(table, places, self.link)]

    @staticmethod
    def _counted(row: tuple[str, ...], count: int) -> tuple[str, ...]:
        """Two accesses of one kind on one line (``self.x.a + self.x.b``) are one row, ``x2``."""
        kind = f"{row[0]} x{count}" if count > 1 else row[0]
        rest = " ".join(cell for cell in row[3:] if cell)
        return (kind, row[1], row[2], rest) if rest else (kind, row[1], row[2])

    def members(self) -> list[str]:
        members = self.result.get("members")
        if not members:
            return []
        rows = [
            (
                f"line {member['line']}",
                member["name"],
                f"[{member['kind']}]",
                "" if member["documented"] or member["kind"] in (ATTRIBUTE, VARIABLE) else "(no docstring)",
            )
            for member in members
        ]
        return [f"members ({len(members)}):", *_table(rows, width=self.width)]

    def submodules(self) -> list[str]:
        names = self.result.get("submodules")
        if not names:
            return []
        wrapper = textwrap.TextWrapper(self.width or 100, "  ", "  ", break_long_words=False)
        prefix = f"{self.result['qualname']}."
        return [f"submodules ({len(names)}):", *wrapper.wrap(", ".join(name.removeprefix(prefix) for name in names))]

    def imports(self) -> list[str]:
        """The package's symbols the module binds by import, each with where it is defined."""
        found = self.result.get("imports")
        if not found:
            return []
        rows = [(row["name"], f"-> {row['target']}", f"[{row['kind']}]") for row in found]
        return [f"imports from the package ({len(found)}):", *_table(rows, width=self.width)]

    def constructed_by(self) -> list[str]:
        edges = self.result.get("constructed_by")
        if not edges:
            return []
        rows = [(self.name(edge["caller"]), self.lines_in(edge)) for edge in edges]
        places = [(row[1], edge.get("permalink", "")) for row, edge in zip(rows, edges, strict=True)]
        return [f"constructed by ({len(edges)}):", *_linked(_table(rows, width=self.width), places, self.link)]

    def callers(self) -> list[str]:
        """Callers of a function or method, even none; of an attribute or variable, only when some."""
        result = self.result
        if "callers" not in result or not (result["callers"] or result["kind"] not in (ATTRIBUTE, VARIABLE)):
            return []
        rows = [
            (self.name(edge["caller"]), self.lines_in(edge), f"[{', '.join(edge['how'])}]")
            for edge in result["callers"]
        ]
        table = _table(rows, caps=(60, 40), width=self.width)
        places = [(row[1], edge.get("permalink", "")) for row, edge in zip(rows, result["callers"], strict=True)]
        return [f"callers ({len(result['callers'])}):", *_linked(table, places, self.link)]

    def callees(self) -> list[str]:
        edges = self.result["callees"]
        if not edges:
            return []
        rows = []
        for edge in edges:
            marker = "" if edge["certain"] or "unresolved" in edge["how"] else "(inferred)"
            if edge.get("stands_in_for"):  # (see rlmap.query.standins)
                marker = f"(a stand-in: {edge['stands_in_for']} runs unless its import fails)"
            rows.append(
                (f"line {_lines(edge['lines'])}", self.name(edge["callee"]), f"[{', '.join(edge['how'])}]", marker)
            )
        table = _table(rows, caps=(16, 60, 14), width=self.width)
        places = [(row[0], edge.get("permalink", "")) for row, edge in zip(rows, edges, strict=True)]
        return [f"callees ({len(edges)}):", *_linked(table, places, self.link)]


def _format_key(result: dict[str, Any], width: int = 0, link: Link | None = None) -> str:
    lines = [f"{result['key']}  (tensordict key)"]
    also = [c["qualname"] for c in result.get("also_symbols", ())]
    if also:
        named = ", ".join(also) if len(also) <= _ALSO else f"{', '.join(also[:_ALSO])} and {len(also) - _ALSO} more"
        text = f"also the name of {len(also)} symbol{'s' if len(also) > 1 else ''}: {named}"
        text += (
            f"; to show {'it' if len(also) == 1 else 'one'}, pass a longer suffix or its full name "
            f"(rlmap show '{_unique_suffix(also[0], also)}')"
        )
        wrapper = textwrap.TextWrapper(width or 100, "  ", "    ", break_long_words=False)  # (a name is never cut)
        lines.extend(wrapper.wrap(text))
    for title, kinds in (("writers", ("write",)), ("readers", ("read", "check")), ("deleters", ("delete",))):
        selected = [access for access in result["accesses"] if access["kind"] in kinds]
        if selected:
            lines.append("")
            lines.append(f"{title} ({len(selected)}):")
            rows = []
            for access in selected:
                guards = " / ".join(readable_guards(access["guards"]))
                row = (
                    _key_access_text(access),
                    access["location"],
                    access["function"],
                    f"[{guards}]" if guards else "",
                )
                rows.append(row if guards else row[:3])
            places = [(access["location"], access.get("permalink", "")) for access in selected]
            lines.extend(_linked(_table(rows, caps=(40, 60, 60), width=width), places, link or _plain_link))
        lines.extend(_placed_rows(result.get("placed", ()), title, kinds, width, link))
    return "\n".join(lines)


def _placed_rows(
    placed: Sequence[dict[str, Any]], title: str, kinds: Sequence[str], width: int, link: Link | None
) -> list[str]:
    """A key's accesses of ``kinds`` that the profile's claims place (:mod:`rlmap.query.placed`):
    where, in which function, what the profile says of it."""
    selected = [row for row in placed if row["kind"] in kinds]
    if not selected:
        return []
    rows = []
    for row in selected:
        guards = " / ".join(readable_guards(row["guards"]))
        rows.append((row["location"], row["function"], row["how"] + (f" [{guards}]" if guards else "")))
    places = [(row["location"], row.get("permalink", "")) for row in selected]
    return [
        "",
        f"{title} through a value, the key not named there (by the profile's claims, checked) ({len(selected)}):",
        *_linked(_table(rows, caps=(40, 60), width=width), places, link or _plain_link),
    ]


def _key_access_text(access: dict[str, Any]) -> str:
    """How a key is accessed, on what: ``td.get``, ``data[]``, ``in data.keys()``, ``set (init_key)``,
    ``part[] (on a copy)``."""
    how, receiver = access["how"], access.get("receiver", "")
    how, copy, _ = how.partition(ON_COPY)  # (rlmap.index.keys: a write into a local copy)
    if copy:
        text = _key_access_text({**access, "how": how, "via": ""})
        return f"{text} (on a copy, {access['via']})" if access.get("via") else f"{text} (on a copy)"
    if not receiver or how.startswith(receiver + "("):  # (``TensorDict({...})``: a dict the container is made from)
        text = how
    elif how == "[]":
        text = f"{receiver}[]"
    elif how.startswith("in "):
        text = f"in {receiver}.{how[3:]}"
    else:
        text = f"{receiver}.{how}"
    return f"{text} ({access['via']})" if access.get("via") else text


def _lines(lines: list[int]) -> str:
    return ", ".join(str(line) for line in lines)


def _echoed(query: str) -> str:
    """A name as an error repeats it: on one line (a newline in it shown as ``\\x0a``) and bounded."""
    return clipped(inert(query), 120)
