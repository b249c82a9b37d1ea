"""What ``--scope PREFIX`` keeps, for ``graph`` and ``diff`` alike: a dotted prefix of qualified
names (the package, a module, a class, a function), never a partial name (``torchrl.coll``)."""

from __future__ import annotations


def in_scope(qualname: str, scopes: tuple[str, ...]) -> bool:
    """Whether ``qualname`` is one of ``scopes`` or under one of them (everything, with none)."""
    return not scopes or any(qualname == prefix or qualname.startswith(prefix + ".") for prefix in scopes)
