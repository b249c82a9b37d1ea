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

from rlmap.index.records import CLASS
from rlmap.model.calls import CallResolution
from rlmap.model.constants import KeyConstants
from rlmap.model.mro import mro
from rlmap.model.symbols import base_parts
from rlmap.model.target import CERTAIN, Target

__all__ = ["CERTAIN", "Resolver", "Target"]

# Modules whose classes give a subclass no attribute holding data (``object``, ``Generic``,
# ``ABC``): a base from one of them says nothing of where an attribute comes from.
_NO_ATTRIBUTES = frozenset({"builtins", "typing", "typing_extensions", "abc", "collections.abc"})


class Resolver(CallResolution, KeyConstants):
    """Symbol table and resolution rules for one package."""

    _handed_results: set[str] | None = None  # (see _made_into_tensordict)

    def held_class(self, cls: str, attribute: str) -> str:
        """The class of the package whose instance ``self.<attribute>`` holds in ``cls``, by its
        annotations and assignments (``tensor_keys``: the estimator's ``_AcceptedKeys``)."""
        found = self.attribute_type(cls, attribute)
        if found is None or found.external or not self.is_kind(found.qualname, CLASS):
            return ""
        owner, _, name = found.qualname.rpartition(".")
        if self.is_kind(owner, CLASS):  # a nested class (``_AcceptedKeys``): the one ``cls`` sees, as ``self`` does
            seen = self.member(cls, name)
            if seen is not None and self.is_kind(seen, CLASS):
                return seen
        return found.qualname

    def plain_container(self, function: str, receiver: str) -> bool:
        """Whether the items of ``receiver``, in ``function``, are no tensordict's keys: it is a
        plain mapping, declared or made as one (``info: dict``, ``d = dict(...)``:
        :meth:`plain_mapping`), made as one by every binding and kept in the function
        (``kwargs = {}``: :data:`~rlmap.index.records.PLAIN`), or the result of a call whose return annotation is one
        (``metrics = self._run_eval(...)`` with ``-> dict[str, Any]``), and no tensordict is
        made from it or updated with it there (``obs_dict = self.read_obs(obs)`` then
        ``TensorDict(obs_dict, ...)``: its items are the step's keys), and the function does not
        return it where a tensordict is made from its result (:meth:`_made_into_tensordict`)."""
        if receiver in self.handed.get(function, ()) or self._made_into_tensordict(function, receiver):
            return False
        if receiver in self.plain_dicts.get(function, ()) or self.plain_mapping(function, receiver):
            return True
        binding = self.locals.get(function, {}).get(receiver)
        loops = self.key_bindings.get(function, {}).get(receiver, ())
        if (
            binding is None
            and loops
            and all(loop.how == "loop" and self._inherited_from_outside(function, loop.parts[1]) for loop in loops)
        ):
            return True  # ``for group in self.param_groups``: an item of an optimizer's list
        return (
            binding is not None
            and binding[1] == "assignment"
            and bool(binding[0])
            and self.returns_mapping(function, binding[0])
        )

    def _inherited_from_outside(self, function: str, attribute: str) -> bool:
        """Whether ``self.<attribute>``, in method ``function``, is an attribute the class gets
        from a base outside the analysed code (an optimizer's ``param_groups`` from
        ``torch.optim.Optimizer``): no class of its MRO here defines, assigns or declares it, and
        one of them has a base named outside.  No package outside makes a tensordict (tensordict
        itself is analysed with the package), so what such an attribute holds has none of the
        tensordict's keys."""
        cls = self.self_name(function)[1]
        if not cls or self.member(cls, attribute) is not None or self.attribute_type(cls, attribute) is not None:
            return False
        order = mro(self.bases, cls)
        if any((owner, attribute) in self.written for owner in order):
            return False
        return any(self._outside_base(owner) for owner in order)

    def _outside_base(self, cls: str) -> bool:
        """Whether a base of ``cls`` as written is a name outside the analysed code."""
        symbol = self.symbols.get(cls)
        if symbol is None:
            return False
        module, scope = self.module_of(cls), cls.rpartition(".")[0]
        for text in symbol.bases:
            parts = base_parts(text)
            if parts is not None and self.resolve_dotted(module, scope, parts) is None:
                outside = self.external_name(module, scope, parts)
                if outside is not None and outside.rpartition(".")[0] not in _NO_ATTRIBUTES:
                    return True
        return False

    def _made_into_tensordict(self, function: str, receiver: str) -> bool:
        """Whether ``function`` returns the local ``receiver`` and a tensordict is made from its
        result somewhere (``TensorDict(self._obs_as_tensordict(), ...)``, or ``obs =
        self._build_obs_dict(state)`` then ``TensorDict({**obs, ...})``): the dict it returns,
        declared plain (``-> dict[str, Tensor]``), holds the tensordict's keys.  The calls are
        resolved by name and type (one resolved to nothing, ``inner_collector.state_dict()``, names
        no function: by its name alone it would name every ``state_dict`` of the package)."""
        if self._handed_results is None:
            self._handed_results = {
                target.qualname
                for site in self.handed_calls
                for target in self.resolve_call(site)
                if target.how != "unresolved"
            }
        if function not in self._handed_results:
            return False
        return any(site.value == receiver for site in self._returns_of(function))
