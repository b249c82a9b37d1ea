"""Beside the pipeline, query: ``rlmap show`` and ``rlmap graph`` answers from the model."""
