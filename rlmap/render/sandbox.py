"""The jinja2 environment every template and prose entry renders in: a bounded sandbox, and
a loader confined to its template directories (a user's, the profile's, then rlmap's own)."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import jinja2.sandbox

from rlmap.render.formatters import TemplateError


def template_dirs(extra: Path | None, profile: Path | None = None) -> list[str]:
    """A user's template directory first (it may override any template), then the profile's
    own overrides, then the shipped ones."""
    dirs = [str(folder) for folder in (extra, profile) if folder is not None]
    dirs.append(str(shipped_templates()))
    return dirs


def shipped_templates() -> Path:
    """The templates rlmap ships: ``rlmap.templates`` once installed, ``templates/`` in a checkout."""
    try:
        return Path(str(resources.files("rlmap.templates")))
    except ModuleNotFoundError:  # run from a checkout (PYTHONPATH=.) without installing
        return Path(__file__).resolve().parent.parent.parent / "templates"


# Bounds on what a template or a prose entry may build: a hostile profile must not be able to
# exhaust memory or time with ``"x" * 10**12`` or nested loops over ``range``.
MAX_STRING = 1_000_000
MAX_RANGE_TOTAL = 1_000_000
MAX_EXPONENT = 256


class _ConfinedLoader(jinja2.FileSystemLoader):
    """A FileSystemLoader that refuses a template whose real path leaves its search directory.

    jinja2 already rejects ``..`` in template names; this also stops a symlink inside a user's
    template directory from reading any other file of the machine into a page.
    """

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Any]:
        for base in self.searchpath:  # a name that is no file would be passed over for the next folder's
            path = Path(base, *template.split("/"))
            if path.is_file():
                break
            if os.path.lexists(path):
                what = "a directory" if path.is_dir() else "a broken link" if path.is_symlink() else "not a file"
                raise TemplateError(
                    f"template '{path}' is {what}: it would be passed over for rlmap's own",
                    "put the template there as a file, or remove it to use rlmap's",
                )
        try:
            source, filename, uptodate = super().get_source(environment, template)
        except UnicodeDecodeError as error:
            raise TemplateError(
                f"{self._undecodable(template, error)}: template is not UTF-8 text ({error.reason})",
                "save the template as UTF-8",
            ) from None
        real = Path(filename).resolve()
        if not any(real.is_relative_to(Path(base).resolve()) for base in self.searchpath):
            raise TemplateError(
                f"template '{template}' is a link to a file outside its template directory",
                "replace the symlink with the template itself",
            )
        return source, filename, uptodate

    def _undecodable(self, template: str, error: UnicodeDecodeError) -> str:
        """``path:line`` of the byte a template could not be decoded at (the first directory's
        file of that name, the one the loader read)."""
        for base in self.searchpath:
            path = Path(base, *template.split("/"))
            if path.is_file():
                line = error.object[: error.start].count(b"\n") + 1
                return f"{path}:{line}"
        return template


class Sandbox(jinja2.sandbox.SandboxedEnvironment):
    """jinja2's sandbox (no attribute starting with ``_``, no unsafe callables, no ``str.format``
    escapes) plus bounds on string size, exponents and the total length of ``range`` loops.

    Every template and every prose entry is rendered here, shipped or not: the same rules
    everywhere, so a user template cannot rely on anything the shipped ones do not need.
    """

    intercepted_binops = frozenset({"*", "**", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=_printable, **options)
        self._range_budget = MAX_RANGE_TOTAL
        self.globals.pop("lipsum", None)
        self.globals["range"] = self._range
        for name in _WIDTH_FILTERS:  # ``"x"|center(10**9)``: a width is a size
            self.filters[name] = _width_bounded(self.filters[name])
        self.filters["format"] = _format_bounded(self.filters["format"])

    def _range(self, *args: int) -> range:
        numbers = jinja2.sandbox.safe_range(*args)
        self._range_budget -= len(numbers)
        if self._range_budget < 0:
            raise jinja2.sandbox.SecurityError(f"loops over range() exceed {MAX_RANGE_TOTAL} steps in one page")
        return numbers

    def reset_budget(self) -> None:
        self._range_budget = MAX_RANGE_TOTAL

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for sized, count in ((left, right), (right, left)):
                repeated = isinstance(sized, str | list | tuple) and isinstance(count, int)
                if repeated and len(sized) * max(count, 0) > MAX_STRING:
                    raise jinja2.sandbox.SecurityError(f"a repeated value longer than {MAX_STRING} characters")
        if operator == "**" and isinstance(right, int | float) and abs(right) > MAX_EXPONENT:
            raise jinja2.sandbox.SecurityError(f"an exponent above {MAX_EXPONENT}")
        if operator == "%":
            _check_percent_format(left)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # (jinja2 names them so)
        if isinstance(getattr(__obj, "__self__", None), str) and getattr(__obj, "__name__", "") in _WIDTH_METHODS:
            _check_widths(args, kwargs)  # ``"x".ljust(10**9)``
        return super().call(__context, __obj, *args, **kwargs)

    def wrap_str_format(self, value: Any) -> Any:
        wrapped = super().wrap_str_format(value)
        if wrapped is not None and _WIDE_FIELD.search(value.__self__):
            raise jinja2.sandbox.SecurityError("a format field wider than 9999 characters")
        return wrapped


# an object printed by its default representation, which holds its address in memory
_ADDRESS = re.compile(r"<[^<>\n]{0,200} at 0x[0-9a-fA-F]+>")


def _printable(value: Any) -> Any:
    """What a ``{{ ... }}`` prints, refused when it is a function, a class or any object shown with
    its address (``{{ sym }}`` for ``{{ sym("X") }}``): the page would change at every run, and
    ``generate --check`` never pass."""
    if isinstance(value, jinja2.Undefined):  # (printing it says what is undefined)
        return value
    if callable(value) and not isinstance(value, str):
        raise jinja2.sandbox.SecurityError(f"a {type(value).__name__} printed as it is - call it, or print a value")
    if not isinstance(value, str | int | float) and _ADDRESS.search(str(value)):
        raise jinja2.sandbox.SecurityError("an object printed with its address in memory - print one of its values")
    return value


# a %-field whose width or precision is taken from the arguments (``*``) or has five digits
_WIDE_FORMAT = re.compile(r"%[-+ #0]{0,8}(?:\*|[0-9]{5}|[0-9]{0,4}\.(?:\*|[0-9]{5}))")
# what takes a width (a number of characters to fill), as filters and as methods of a string
_WIDTH_FILTERS = ("center", "indent", "wordwrap")
_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs"})


def _check_percent_format(template: Any) -> None:
    if isinstance(template, str) and _WIDE_FORMAT.search(template):
        raise jinja2.sandbox.SecurityError("a %-format field wider than 9999 characters")


def _check_widths(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    for value in (*args, *kwargs.values()):
        if isinstance(value, int) and value > MAX_STRING:
            raise jinja2.sandbox.SecurityError(f"a width above {MAX_STRING} characters")
        if isinstance(value, str) and len(value) > MAX_STRING // 10:  # ``indent("x" * ...)``: a prefix per line
            raise jinja2.sandbox.SecurityError(f"an indentation longer than {MAX_STRING // 10} characters")


def _width_bounded(original: Callable[..., Any]) -> Callable[..., Any]:
    given = 2 if getattr(original, "jinja_pass_arg", None) is not None else 1  # (environment,) value

    @functools.wraps(original)  # (keeps jinja2's pass_environment marker)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _check_widths(args[given:], kwargs)
        return original(*args, **kwargs)

    return bounded


def _format_bounded(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def bounded(value: Any, *args: Any, **kwargs: Any) -> Any:
        _check_percent_format(value)  # ``"%*d"|format(10**8, 1)``: the filter formats with ``%``
        return original(value, *args, **kwargs)

    return bounded


# a {}-field with a five-digit width or precision, or one taken from another field (``{0:{1}}``)
_WIDE_FIELD = re.compile(r"\{[^{}]{0,100}?:(?:[^{}]{0,20}?[0-9]{5}|[^{}]{0,20}?\{)")


def make_environment(extra: Path | None = None, profile: Path | None = None) -> jinja2.Environment:
    return Sandbox(
        loader=_ConfinedLoader(template_dirs(extra, profile)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # rst and Markdown, not HTML
    )


def prose_environment() -> Sandbox:
    """Where curated prose renders: the sandbox with no loader, so no include/import/extends."""
    return Sandbox(undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False)
