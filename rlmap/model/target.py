"""What a call resolves to: :class:`Target` and the vocabulary of its ``how``.

=============  ============================================================================
how            meaning
=============  ============================================================================
direct         a name or dotted path bound by a definition or an import (certain)
constructor    ``Class(...)`` -> ``Class.__init__`` (or the class when none is defined)
self           ``self.m()`` / ``cls.m()`` -> the definition found in the class hierarchy
override       ``self.m()`` -> an override of ``m`` in a subclass (virtual dispatch)
super          ``super().m()`` -> the next definition in the hierarchy
property       a property read (``self.p``) -> its getter
annotation     receiver type read from an annotation (``self.env: EnvBase``, ``env: EnvBase``)
assignment     receiver type read from an assignment (``self.x = Cls(...)``, ``x = Cls()``)
unique-name    ``self.x.m()`` with ``self.x`` untyped -> the package's only method ``m`` (likely)
attribute      ``self.fn()`` where ``self.fn`` is an attribute holding a callable
narrowed       receiver type read from an enclosing ``if isinstance(x, C):``
subclass       the receiver's declared type lacks the method: a subclass that defines it
instance       an object of a declared type called (``self.loss_module(batch)``, ``loss_module:
               LossModule``) -> its class's ``__call__``, else ``forward`` (overrides: ``override``);
               gives way to what the value flow finds there
flow           whole-program value flow: a function, class or bound method reaching the callee, or
               a function outside the package reaching a callee that does not name it
               (``sync = torch.cuda.synchronize; sync()``) (:mod:`rlmap.model.valueflow`)
callback       a function passed to a builtin or library that calls it (``map``, ``sorted(key=)``,
               ``threading.Thread(target=)``, ``threading.Timer``, ``atexit.register``)
implicit       a method Python calls by itself (``__enter__``, ``__iter__``, ``__call__``,
               ``forward`` of a called ``nn.Module``) on a receiver the value flow knows; a
               metaclass's ``__call__`` run by ``C(...)``, and ``C.__init__`` run by its
               ``super().__call__(...)``
setter         ``obj.p = v`` -> the property setter of ``p``
decorator      applying a decorator to a definition (the module or class defining it calls it)
external       resolved to a name outside the package (``torch.cat``)
unresolved     nothing found; kept as a node named after the expression
=============  ============================================================================

Every ``how`` but the certain ones (:data:`CERTAIN`) is a likely edge, not a proven one.
"""

from __future__ import annotations

from dataclasses import dataclass

CERTAIN = frozenset({"direct", "constructor", "self", "super", "property", "external"})
# Found only because a value reaches the callee (a function passed around, a ``functools.partial``,
# an object called): not a call that names its callee.
BY_VALUE = frozenset({"flow", "callback", "implicit", "setter", "decorator"})


@dataclass(frozen=True, slots=True)
class Target:
    """One resolved target of a call: a qualname and how it was found."""

    qualname: str
    how: str
    external: bool = False
    cls: str = ""  # constructors: the class instantiated (``qualname`` may be an inherited ``__init__``)


def unresolved(text: str) -> Target:
    """The node a call that resolves to nothing points at, named after its expression."""
    return Target(f"?:{text}", "unresolved", external=True)
