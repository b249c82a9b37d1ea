"""Printing a constant of the analysed code, whatever its size."""

from __future__ import annotations


def safe_repr(value: object) -> str:
    """``repr(value)``; an integer too long for Python to print in decimal (over 4,300 digits:
    ``0xfff...`` is valid source) in hexadecimal, exact, where ``repr`` raises."""
    try:
        return repr(value)
    except ValueError:
        if isinstance(value, int):
            return hex(value)
        raise
