"""quotes sections: the lines of a class's methods that change the data's layout, as written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rlmap.pages.refs import Refs
from rlmap.pages.sections.base import Context
from rlmap.pages.sections.code import build_quotes
from rlmap.pages.sections.specs import Quotes
from tests.conftest import model_of

PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/rnn.py": '''
        import torch
        from torch import nn


        class Module:
            def forward(self, x, lengths, steps):
                """Runs x.reshape(...) in the docstring: not quoted."""
                # x.transpose(0, 1) in a comment: not quoted
                y = x.transpose(0, 1)
                total = x.sum()
                packed = nn.utils.rnn.pack_padded_sequence(y, lengths, batch_first=True)
                out, _ = nn.utils.rnn.pad_packed_sequence(packed, batch_first=True)
                hidden = torch.stack(steps, 0)
                first, second = hidden.unbind(0)
                both = torch.cat([first, second], -1)
                return both[:, -1] + total
        ''',
}


def test_layout_lines_are_quoted_with_stacking_packing_and_indexing(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    root = make_package(PACKAGE)
    model = model_of(root, "pkg")
    ctx = Context(model, Refs(model, root), "test")
    (entry,) = build_quotes(Quotes(classes=["pkg.rnn.Module"]), ctx).functions
    assert entry.ref.qualname == "pkg.rnn.Module.forward"
    assert [(site.anchor.line, site.text) for site in entry.rows] == [
        (9, "y = x.transpose(0, 1)"),
        (11, "packed = nn.utils.rnn.pack_padded_sequence(y, lengths, batch_first=True)"),
        (12, "out, _ = nn.utils.rnn.pad_packed_sequence(packed, batch_first=True)"),
        (13, "hidden = torch.stack(steps, 0)"),
        (14, "first, second = hidden.unbind(0)"),
        (15, "both = torch.cat([first, second], -1)"),
        (16, "return both[:, -1] + total"),
    ]
