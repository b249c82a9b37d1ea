"""Beside the pipeline, audit: hand-written docs and docstrings checked against the model."""
