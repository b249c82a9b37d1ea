"""``python -m rlmap``: the same as the ``rlmap`` command."""

from rlmap.cli import run

run()
