"""The page kinds rlmap generates: file names, templates, one-line summaries and section ids.

Section ids are what curated data links to (``see = ["collectors:flags"]``); the templates
render each section through ``f.section(id)`` so that titles live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class PageKind:
    slug: str
    template: str
    summary: str
    sections: dict[str, str] = field(default_factory=dict)  # id -> title


PAGE_KINDS: dict[str, PageKind] = {
    "collectors": PageKind(
        "collectors_internals",
        "collectors.j2",
        "the per-step flow of the rollout, the carrier, sync points, device-cast flags, trajectory ids and hooks",
        {
            "flow": "Per-timestep flow",
            "carrier": "The carrier",
            "sync": "Sync points",
            "flags": "Device-cast flags",
            "traj": "Trajectory ids",
            "hooks": "Hooks",
            "helpers": "Private helpers",
            "subclasses": "Subclasses that override the rollout or use an old name",
        },
    ),
    "recurrent": PageKind(
        "recurrent_state_lifecycle",
        "recurrent.j2",
        "where recurrent hidden state is read, zeroed and written, the is_init and hidden-state keys, recurrent mode",
        {
            "chain": "From forward to the recurrent backends",
            "quotes": "Reshapes, transposes and indexing",
            "mode": "Recurrent mode",
            "keys": "Key flow",
            "caveats": "Caveats from the docstrings",
        },
    ),
    "advantages": PageKind(
        "advantages_internals",
        "advantages.j2",
        "each estimator's kernels and the condition that picks them, is_init masking, value-network calls",
        {
            "kernels": "Estimators and their kernels",
            "masking": "Masking at trajectory boundaries",
            "values": "Value networks and NaN sanitising",
        },
    ),
    "helpers": PageKind(
        "undocumented_helpers", "helpers.j2", "private helpers without a docstring, ranked by their callers"
    ),
    "glossary": PageKind("glossary", "glossary.j2", "TorchRL terms, each with the code it is about"),
    "debugging": PageKind(
        "debugging_map", "debugging.j2", "symptoms you may meet, their likely cause, and where to look"
    ),
}
INDEX = PageKind("internals_index", "index.j2", "where to start when something breaks")

FORMATS = ("rst", "md")  # reStructuredText for Sphinx, Markdown for GitHub / MyST

SECTIONS: dict[str, dict[str, str]] = {name: kind.sections for name, kind in PAGE_KINDS.items()}
