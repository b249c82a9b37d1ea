"""``python -m rlmap``: the same as the ``rlmap`` command."""

from rlmap.entry import run

run()
