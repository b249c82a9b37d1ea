"""Audit: stale references, rule examples run as tests."""
