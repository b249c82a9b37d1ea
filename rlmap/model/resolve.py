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
from rlmap.model.target import CERTAIN, Target

__all__ = ["CERTAIN", "Resolver", "Target"]


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
        return (
            binding is not None
            and binding[1] == "assignment"
            and bool(binding[0])
            and self.returns_mapping(function, binding[0])
        )

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
