"""Each function's control flow, as the pages read it: once per source text in a run, and kept
in the cache across runs.

A flow (:func:`rlmap.index.controlflow.function_flow`) is a function of the function's source
text and the line it starts on, and of the code that reads it: that is its key.  Reading one
costs a libcst parse of the function and the import of libcst itself; a warm ``generate
--check`` finds every flow of the pages in the cache and does neither.  An entry is plain data
decoded into the flow's own types (see :mod:`rlmap.index.cache`).
"""

from __future__ import annotations

from rlmap.index.cache import Cache, code_version, content_key
from rlmap.index.controlflow import FunctionFlow, function_flow

FLOWS = "flows"
_CODE = code_version("index.controlflow", "index.flowreader")


class Flows:
    """The flows read by a run, and the cache they are kept in (``None``: none is kept)."""

    def __init__(self, cache: Cache | None = None) -> None:
        self.cache = cache if cache is not None and cache.directory is not None else None
        self._read: dict[tuple[str, int], FunctionFlow] = {}

    def of(self, source: str, def_line: int) -> FunctionFlow:
        """:func:`~rlmap.index.controlflow.function_flow` of ``source`` at ``def_line``
        (:class:`~rlmap.index.controlflow.FlowError` when it holds no function)."""
        found = self._read.get((source, def_line))
        if found is None:
            found = self._read[source, def_line] = self._kept(source, def_line)
        return found

    def _kept(self, source: str, def_line: int) -> FunctionFlow:
        if self.cache is None:
            return function_flow(source, def_line)
        key = content_key(FLOWS, _CODE, source, str(def_line))
        found = self.cache.get(FLOWS, key, FunctionFlow)
        if found is None:
            found = function_flow(source, def_line)
            self.cache.put(FLOWS, key, found)
        return found
