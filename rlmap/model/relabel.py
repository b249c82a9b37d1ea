"""Moved lines: a file whose records changed only in their line numbers changes the model only there.

Adding a line to a docstring, a comment or a blank line between two functions moves every
definition, call and access below it, so the file's records change and, with them, the key the
resolved model is cached under.  Resolving again would give the same model with those lines
moved, because resolution reads a line only as a label: a call site is found again by its
(caller, line, text), rows are ordered by line within one function or file (an order a move
keeps), and nothing compares lines of two files or derives a name from a line (a container or
comprehension of the value flow is numbered in the order it is met, not by where it is:
:mod:`rlmap.index.summaries`).

So when every changed file's new records are its old records with each line number ``n``
replaced by ``moved[n]`` (the same records, in the same order), :func:`relabelled` makes the
new model from the cached one by moving those files' lines, and nothing is resolved.  The mapping
is the only one possible: the records' distinct line numbers, old and new, paired in sorted order;
it is checked by moving the old records and comparing them with the new ones, field by field.
A row of the model is told to its file by its function's name (the longest module name it starts
with); where names do not tell files apart (:func:`told_apart`), nothing is moved.
Tests compare the model made this way with one resolved from scratch, byte for byte
(``tests/model/test_relabel.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import msgspec

from rlmap.errors import CacheError
from rlmap.index.cache import Sections
from rlmap.index.records import (
    AttributeAccess,
    CallSite,
    Diagnostic,
    ImportRecord,
    KeyAccess,
    ModuleIndex,
    ReturnSite,
    Symbol,
)
from rlmap.model.codemodel import _STORED_SYMBOL, _TABLE_KEYS, _TABLES, ModelHead, _decode, _shard_of

# Where each record keeps its line numbers (positions in its fields, as a tuple).
_LINE_FIELDS: dict[type, tuple[int, ...]] = {
    kind: tuple(kind.__slots__.index(name) for name in ("line", "end_line") if name in kind.__slots__)
    for kind in (Symbol, CallSite, AttributeAccess, ReturnSite, KeyAccess, ImportRecord, Diagnostic)
}
_FLOW_LINE: Final = 5  # a flow row's line (rlmap.index.records.Flow)
_RECORDS = ("symbols", "calls", "attributes", "keys", "imports", "returns", "diagnostics")

# The model's tables whose rows hold lines, the position of the line in a row, and whose file
# the line is in: the row's key's (the caller, the function) or a field of the row's.
_SYMBOL_PATH, _SYMBOL_LINES = 2, (3, 4)
_ATTRIBUTE_FUNCTION, _ATTRIBUTE_LINE = 3, 4  # AttributeAccess
_KEY_FUNCTION, _KEY_LINE = 2, 3  # KeyAccess
_SITE_LINE = 0  # ResolvedCall
_RETURN_LINE = 1  # ReturnSite
_EDGE_LINES = 1  # (callee, lines, hows)


def moved_lines(old: ModuleIndex, new: ModuleIndex) -> dict[int, int] | None:
    """Each line of ``old``'s records -> its line in ``new``'s, when ``new``'s records are
    ``old``'s with their lines moved and nothing else changed; ``None`` otherwise (and for two
    identical files: nothing moved)."""
    before, after = _lines(old), _lines(new)
    if len(before) != len(after) or before == after:
        return None
    moved = dict(zip(before, after, strict=True))
    return moved if _moved_module(old, moved) == new else None


def _lines(module: ModuleIndex) -> list[int]:
    found: set[int] = set()
    for name in _RECORDS:
        for record in getattr(module, name):
            for position in _LINE_FIELDS[type(record)]:
                found.add(getattr(record, record.__slots__[position]))  # (an int: a line field)
    found.update(row[_FLOW_LINE] for row in module.flow)
    return sorted(found)


def _moved_record(record: Any, moved: Mapping[int, int]) -> Any:
    fields = [getattr(record, name) for name in record.__slots__]
    for position in _LINE_FIELDS[type(record)]:
        fields[position] = moved[fields[position]]
    return type(record)(*fields)


def _moved_module(module: ModuleIndex, moved: Mapping[int, int]) -> ModuleIndex:
    changed: dict[str, Any] = {
        name: tuple(_moved_record(record, moved) for record in getattr(module, name)) for name in _RECORDS
    }
    changed["flow"] = tuple((*row[:_FLOW_LINE], moved[row[_FLOW_LINE]], *row[_FLOW_LINE + 1 :]) for row in module.flow)
    fields = {name: getattr(module, name) for name in module.__dataclass_fields__}
    return ModuleIndex(**{**fields, **changed})


class _Unmoved(Exception):
    """A line of a moved file that its records did not hold: the model cannot be moved."""


def relabelled(
    entry: Sections[ModelHead], moved: Mapping[str, Mapping[int, int]], modules: Mapping[str, str]
) -> tuple[ModelHead, dict[str, bytes]] | None:
    """The head and sections of the model ``entry`` with the lines of each file of ``moved``
    (path -> old line -> new line) moved, ``modules`` naming each module's file (module -> path);
    ``None`` when a line of one of those files is not one its mapping names (the model holds
    something the records did not say: resolve instead).  The caller has checked that names tell
    the files apart (:func:`told_apart`).

    Only the sections holding a row of a moved file are decoded and encoded again; the others
    are the entry's own bytes.  A table keyed by function (calls, sites, returns) holds a moved
    row only under a name of a moved file's modules, read from its names; the symbols, and the
    attribute and key tables (accesses from every file under one name), are read whole."""
    head = entry.head
    file_of = _file_finder(modules)
    try:
        sections = {name: data for name in entry.names() if (data := entry.read(name)) is not None}
        for table, move_row in _movers(moved, file_of, head.files).items():
            shards = head.shards.get(table, 1)
            if table in _BY_FUNCTION:
                touched = {_shard_of(name, shards) for name in _names(entry, table) if file_of(name) in moved}
            else:
                touched = set(range(shards))
            row = _STORED_SYMBOL if table == "symbols" else _TABLES[table]
            kind: Any = dict.__class_getitem__((_TABLE_KEYS.get(table, str), row))  # type: ignore[attr-defined]
            for number in sorted(touched):
                section = f"{table}:{number}"
                rows = _decode(entry, section, kind, table)
                sections[section] = msgspec.msgpack.encode({key: move_row(key, row) for key, row in rows.items()})
        diagnostics = tuple((path, _at(moved, path, line), message) for path, line, message in head.diagnostics)
    except (_Unmoved, CacheError, IndexError):  # (IndexError: a symbol's file is not one the head names)
        return None
    return msgspec.structs.replace(head, diagnostics=diagnostics), sections


# The tables keyed by the function their rows are written in: only the shards holding a name of
# a moved file's modules change.  The symbols (an attribute's is at its first write, wherever
# that is), the attributes and the keys (accesses from every file under one name) are read whole.
_BY_FUNCTION = frozenset({"calls", "sites", "returns"})


def _at(moved: Mapping[str, Mapping[int, int]], path: str, line: int) -> int:
    """Where ``line`` of ``path`` moved to (itself in a file that did not move)."""
    lines = moved.get(path)
    if lines is None:
        return line
    found = lines.get(line)
    if found is None:
        raise _Unmoved(path, line)
    return found


def told_apart(
    moved: Iterable[str], records_of: Callable[[str], ModuleIndex | None], modules: Mapping[str, str]
) -> bool:
    """Whether the rows of each file of ``moved`` are found by their names alone (``records_of``:
    a file's records; ``modules``: module -> its file).

    A row's file is the module its function's name starts with (the longest such).  A function
    ``utils`` of ``pkg/__init__.py`` beside a module ``pkg/utils.py`` breaks that: its name is the
    module's, and the rows under that name (its own and the module's body) come from two files.
    So every name a moved file's records write rows under must lead back to that file, and no
    package above it (the only files whose names can start with its module's) may write one
    that starts with its module's name."""
    file_of = _file_finder(modules)
    for path in moved:
        module = records_of(path)
        if module is None or any(file_of(name) != path for name in _written(module)):
            return False
        name = module.module
        above = name.rpartition(".")[0]
        while above:
            parent = modules.get(above)
            if parent is not None and parent != path:
                found = records_of(parent)
                if found is None or any(each == name or each.startswith(name + ".") for each in _written(found)):
                    return False
            above = above.rpartition(".")[0]
    return True


def _written(module: ModuleIndex) -> set[str]:
    """The names a file's records write the model's rows under: its symbols, callers and functions."""
    names = {symbol.qualname for symbol in module.symbols}
    names.update(site.caller for site in module.calls)
    names.update(access.function for access in module.attributes)
    names.update(access.function for access in module.keys)
    names.update(site.function for site in module.returns)
    return names


def _names(entry: Sections[ModelHead], table: str) -> list[Any]:
    return list(_decode(entry, f"{table}:names", list[_TABLE_KEYS.get(table, str)], table))  # type: ignore[misc]


def _file_finder(modules: Mapping[str, str]) -> Callable[[str], str]:
    """The file a qualified name (a function, a lambda, a class body, a module) is written in: its
    longest prefix that is a module's."""
    known: dict[str, str] = {}

    def file_of(name: str) -> str:
        found = known.get(name)
        if found is None:
            prefix = name
            while prefix and prefix not in modules:
                prefix = prefix.rpartition(".")[0]
            found = known[name] = modules.get(prefix, "")
        return found

    return file_of


def _movers(
    moved: Mapping[str, Mapping[int, int]], file_of: Callable[[str], str], files: Iterable[str]
) -> dict[str, Callable[[Any, Any], Any]]:
    """Per table, what moves one row (given its key): the lines of a row of a moved file."""
    paths = tuple(files)

    def at(path: str, line: int) -> int:
        return _at(moved, path, line)

    def symbol(_: str, row: tuple[Any, ...]) -> tuple[Any, ...]:
        path = paths[row[_SYMBOL_PATH]]
        if path not in moved:
            return row
        first, last = _SYMBOL_LINES
        return (*row[:first], at(path, row[first]), at(path, row[last]), *row[last + 1 :])

    def calls(caller: str, edges: tuple[Any, ...]) -> tuple[Any, ...]:
        path = file_of(caller)
        if path not in moved:
            return edges
        return tuple((callee, tuple(at(path, line) for line in lines), hows) for callee, lines, hows in edges)

    def rows_at(line_at: int, function_at: int | None) -> Callable[[Any, Any], Any]:
        def move(key: Any, rows: tuple[tuple[Any, ...], ...]) -> tuple[tuple[Any, ...], ...]:
            out = []
            for row in rows:
                path = file_of(key if function_at is None else row[function_at])
                out.append(row if path not in moved else (*row[:line_at], at(path, row[line_at]), *row[line_at + 1 :]))
            return tuple(out)

        return move

    return {
        "symbols": symbol,
        "calls": calls,
        "sites": rows_at(_SITE_LINE, None),
        "returns": rows_at(_RETURN_LINE, None),
        "attributes": rows_at(_ATTRIBUTE_LINE, _ATTRIBUTE_FUNCTION),
        "keys": rows_at(_KEY_LINE, _KEY_FUNCTION),
    }
