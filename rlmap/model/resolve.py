"""Name resolution over a whole package: the :class:`Resolver` that answers every question of the model.

Generic: nothing here knows about torchrl.  ``Resolver(modules)`` builds the symbol table;
``resolve_call(site)`` returns the call's targets, each with how it was found (the vocabulary is
in :mod:`rlmap.model.target`).  The resolver is one object built in layers, each a module:

- :mod:`rlmap.model.symbols`: definitions, imports and re-exports, class bases, member lookup;
- :mod:`rlmap.model.hierarchy`: overrides in subclasses, the class that introduces an attribute;
- :mod:`rlmap.model.inference`: the type of a receiver, an attribute, a local, a call's result;
- :mod:`rlmap.model.calls`: the targets of a call or a property read;
- :mod:`rlmap.model.constants`: the string constants of a tensordict key expression;
- :mod:`rlmap.model.mro`: the hierarchy walks they share (pure functions of the bases).
"""

from __future__ import annotations

from rlmap.model.calls import CallResolution
from rlmap.model.constants import KeyConstants
from rlmap.model.target import CERTAIN, Target

__all__ = ["CERTAIN", "Resolver", "Target"]


class Resolver(CallResolution, KeyConstants):
    """Symbol table and resolution rules for one package."""
