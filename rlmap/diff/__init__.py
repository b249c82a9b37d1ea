"""Beside the pipeline, ``rlmap diff``: what changed in a package's internals between two versions."""
