"""Tests of rlmap.sphinx: the directives and the role in real Sphinx builds."""
