"""Key vocabularies: the extensions a profile enables to record string-keyed container accesses.

Plain Python has no notion of a "key" worth indexing; a library such as tensordict does:
``td.get("k")``, ``td["k"] = v``, ``in_keys=[...]``.  A :class:`KeyVocabulary` says, as data,
which methods, keywords and declarations name such keys and which receivers are plain dicts
instead.  :data:`EXTENSIONS` names the vocabularies a profile may enable
(``extensions = ["tensordict"]``); with none enabled, extraction records no key access.

This module imports no parser: the warm path (``rlmap show``) reads it to key the cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from rlmap.errors import ConfigError
from rlmap.index.records import DELETE, READ, WRITE


@dataclass(frozen=True, slots=True)
class KeyVocabulary:
    """What names a key in one library's API; each kind is ``read``, ``write`` or ``delete``."""

    name: str
    methods: Mapping[str, str]  # ``td.get("k")``: method -> kind of the access to its key argument
    multi_key_methods: frozenset[str]  # methods whose every positional argument is a key (``select``)
    keywords: Mapping[str, str]  # ``Module(in_keys=[...])``: keyword -> kind
    declarations: tuple[tuple[str, str], ...]  # ``self.out_keys = [...]``: name suffix -> kind, first match wins
    membership_methods: frozenset[str]  # ``"k" in td.keys()``: a check of the key
    plain_receivers: frozenset[str]  # receivers (last name part) whose string keys are not keys: ``kwargs``
    plain_receiver_suffixes: tuple[str, ...] = ()  # ... and receivers named ``*_spec`` or ``*_keys``
    # Functions that give back the keys they are given (``unravel_key_list(in_keys)``): a key list
    # assigned through one of them is still followed by the model.
    key_functions: frozenset[str] = frozenset()
    # Methods that give back a new container (``td.select(...)``, ``td.copy()``): a key written into
    # a local bound to their result is written into that copy, not into the caller's data.
    copy_methods: frozenset[str] = frozenset()
    # Constructors given the entries as a dict (``TensorDict({"is_init": x}, batch)``, a nested
    # dict a nested key): each string key of the dict (the first positional argument, or ``source=``)
    # is written into the new container.
    dict_constructors: frozenset[str] = frozenset()

    def is_plain_receiver(self, name: str) -> bool:
        """Whether ``name["k"]`` / ``name.get("k")`` reads a plain container, not a keyed one."""
        return name in self.plain_receivers or name.endswith(self.plain_receiver_suffixes)

    def declared_kind(self, name: str) -> str:
        """The kind of keys a name declares (``DEFAULT_IN_KEYS`` -> read), ``""`` when none."""
        lowered = name.lower()
        return next((kind for suffix, kind in self.declarations if lowered.endswith(suffix)), "")


def _frozen(mapping: dict[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(sorted(mapping.items())))


TENSORDICT = KeyVocabulary(
    name="tensordict",
    methods=_frozen(
        {
            "get": READ,
            "get_at": READ,
            "pop": READ,
            "select": READ,
            "set": WRITE,
            "set_": WRITE,
            "set_at_": WRITE,
            "fill_": WRITE,
            "setdefault": WRITE,
            "exclude": DELETE,
            "del_": DELETE,
        }
    ),
    multi_key_methods=frozenset({"select", "exclude"}),
    keywords=_frozen({"in_keys": READ, "in_key": READ, "out_keys": WRITE, "out_key": WRITE}),
    declarations=(("in_keys", READ), ("in_key", READ), ("out_keys", WRITE), ("out_key", WRITE)),
    membership_methods=frozenset({"keys"}),
    # Receivers whose string subscripts and ``.get`` are plain dicts or specs, not tensordicts.
    plain_receivers=frozenset(
        {
            "kwargs",
            "kw",
            "environ",
            "config",
            "cfg",
            "__dict__",
            "state_dict",
            "os",
            "sys",
            "modules",
            "globals",
            "locals",
            "json",
            "headers",
            "params",
            "options",
            "extra_kwargs",
            "spec",
        }
    ),
    plain_receiver_suffixes=("_spec", "_keys"),  # ``out_keys[k] = "name"``: a mapping of key names
    key_functions=frozenset({"unravel_key", "unravel_key_list", "unravel_keys", "list", "tuple"}),
    copy_methods=frozenset({"select", "exclude", "copy", "clone", "empty"}),
    dict_constructors=frozenset({"TensorDict", "from_dict"}),
)

EXTENSIONS: Mapping[str, KeyVocabulary] = MappingProxyType({TENSORDICT.name: TENSORDICT})


def enabled_extensions(names: Iterable[str]) -> tuple[str, ...]:
    """The extension names, sorted and once each; an unknown name is a configuration error."""
    chosen = tuple(sorted(set(names)))
    unknown = [name for name in chosen if name not in EXTENSIONS]
    if unknown:
        raise ConfigError(
            f"unknown extension(s): {', '.join(repr(name) for name in unknown)}",
            f"use one of: {', '.join(sorted(EXTENSIONS))}",
        )
    return chosen


def vocabulary_for(names: Iterable[str]) -> KeyVocabulary | None:
    """The vocabulary of the enabled extensions (their union); ``None`` when none is enabled."""
    chosen = [EXTENSIONS[name] for name in enabled_extensions(names)]
    if len(chosen) <= 1:
        return chosen[0] if chosen else None
    return _union(chosen)


def _union(vocabularies: list[KeyVocabulary]) -> KeyVocabulary:
    """One vocabulary that names a key wherever any of ``vocabularies`` does (the later wins a kind)."""
    methods: dict[str, str] = {}
    keywords: dict[str, str] = {}
    multi: set[str] = set()
    membership: set[str] = set()
    plain: set[str] = set()
    declarations: list[tuple[str, str]] = []
    suffixes: list[str] = []
    functions: set[str] = set()
    copies: set[str] = set()
    constructors: set[str] = set()
    for vocabulary in vocabularies:
        methods.update(vocabulary.methods)
        keywords.update(vocabulary.keywords)
        multi |= vocabulary.multi_key_methods
        membership |= vocabulary.membership_methods
        plain |= vocabulary.plain_receivers
        declarations.extend(vocabulary.declarations)
        suffixes.extend(vocabulary.plain_receiver_suffixes)
        functions |= vocabulary.key_functions
        copies |= vocabulary.copy_methods
        constructors |= vocabulary.dict_constructors
    return KeyVocabulary(
        name="+".join(vocabulary.name for vocabulary in vocabularies),
        methods=_frozen(methods),
        multi_key_methods=frozenset(multi),
        keywords=_frozen(keywords),
        declarations=tuple(declarations),
        membership_methods=frozenset(membership),
        plain_receivers=frozenset(plain),
        plain_receiver_suffixes=tuple(suffixes),
        key_functions=frozenset(functions),
        copy_methods=frozenset(copies),
        dict_constructors=frozenset(constructors),
    )
