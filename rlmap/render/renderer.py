"""Rendering: one page at a time, through a template, with curated prose resolved.

Templates (``page.j2`` and one per section kind, shared by both formats) receive the page's
typed sections and a formatter ``f`` (:mod:`rlmap.render.formatters`) whose methods emit correct
rst or Markdown.  ``StrictUndefined`` makes a missing value an error; curated prose is itself
rendered as jinja (in the sandbox of :mod:`rlmap.render.sandbox`, with no loader) so that
``sym("Name")`` resolves at generation time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
import jinja2.nodes

from rlmap import __version__
from rlmap.errors import RlmapError
from rlmap.pages.profile import Prose
from rlmap.pages.refs import Refs
from rlmap.render.formatters import FORMATTERS, TemplateError
from rlmap.render.sandbox import Sandbox, make_environment, prose_environment, shipped_templates, template_dirs

__all__ = ["ProseTemplates", "Renderer", "TemplateError", "make_environment"]


class ProseTemplates:
    """Curated prose compiled in the prose sandbox (:func:`prose_environment`) once per text: the
    renderers of every format share it (a text's template does not depend on the format: what
    it calls, ``sym()`` and the like, is passed to each render)."""

    def __init__(self) -> None:
        self.environment = prose_environment()
        self._compiled: dict[str, jinja2.Template] = {}

    def compiled(self, text: str) -> jinja2.Template:
        """The template of ``text``, the sandbox's budget reset for the render that follows."""
        self.environment.reset_budget()
        template = self._compiled.get(text)
        if template is None:
            template = self._compiled[text] = self.environment.from_string(text)
        return template


class Renderer:
    """Renders pages for one format, resolving curated references through :class:`Refs`."""

    def __init__(
        self,
        environment: jinja2.Environment,
        refs: Refs,
        fmt: str,
        stamp: str,
        terms: dict[str, str] | None = None,
        prose: ProseTemplates | None = None,
    ) -> None:
        self.environment = environment
        self.refs = refs
        self.f = FORMATTERS[fmt]()
        self.f.terms = terms or {}
        self.fmt = fmt
        self.stamp = stamp
        self._prose = prose if prose is not None else ProseTemplates()

    def prose(self, entry: Prose | None) -> str:
        """Curated text with ``sym()``/``key()`` resolved; a dead name fails with file and line."""
        if entry is None:
            return ""
        try:
            template = self._prose.compiled(entry.text)
            functions = {
                "sym": self._prose_sym(entry.origin),
                "name": self._prose_name(entry.origin),
                "key": self._key,
                "term": self._term(entry.origin),
            }
            return template.render(**functions).strip()
        except RlmapError:
            raise
        except jinja2.TemplateError as error:
            raise TemplateError(f"{entry.origin}: prose '{entry.name}': {error}", "fix the jinja text") from None
        except (*_RUNTIME_ERRORS, AttributeError) as error:  # prose is always the user's text
            raise TemplateError(
                f"{entry.origin}: prose '{entry.name}': {type(error).__name__}: {error}", "fix the jinja text"
            ) from None

    def _prose_sym(self, origin: str) -> Any:
        def sym(name: str) -> str:
            return self.f.sym(self.refs.ref(self.refs.lookup(_name_argument("sym", name, origin), origin)))

        return sym

    def _prose_name(self, origin: str) -> Any:
        """``name("Collector.rollout")``: the symbol's short name as code, checked, without a link."""

        def name(value: str) -> str:
            return self.f.code(self.refs.ref(self.refs.lookup(_name_argument("name", value, origin), origin)).display)

        return name

    def _key(self, name: str) -> str:
        return self.f.code(_name_argument("key", name, "a key() call"))

    def _term(self, origin: str) -> Any:
        def term(name: str) -> str:
            try:
                return self.f.glossary_term(_name_argument("term", name, origin))
            except TemplateError as error:
                raise TemplateError(f"{origin}: {error.message}", error.hint) from None

        return term

    def _prose_names(self, template_name: str) -> set[str] | None:
        try:
            return _prose_names_in(self.environment, template_name, set())
        except (jinja2.TemplateError, OSError, RlmapError):
            return None  # rendering reports the template's own problem, with its line

    def page(
        self,
        template_name: str,
        context: dict[str, Any],
        prose: dict[str, Prose],
        slug: str = "",
        sections: dict[str, str] | None = None,
        shown: set[str] | None = None,
    ) -> str:
        self.f.slug = slug
        self.f.sections = sections or {}
        if isinstance(self.environment, Sandbox):
            self.environment.reset_budget()
        try:
            template = self.environment.get_template(template_name)
        except jinja2.TemplateNotFound:
            raise TemplateError(
                f"template '{template_name}' not found in {', '.join(template_dirs(None)[-1:])}",
                "restore it, or point --templates at a directory that has it",
            ) from None
        except jinja2.TemplateSyntaxError as error:
            raise TemplateError(
                f"{error.filename or template_name}:{error.lineno}: {error.message}", "fix the template"
            ) from None
        texts = _OptionalProse({name: self.prose(entry) for name, entry in prose.items()})

        def sym(name: str) -> str:
            origin = f"template {template_name}"
            return self.f.sym(self.refs.ref(self.refs.lookup(_name_argument("sym", name, origin), origin)))

        try:
            text = template.render(
                f=self.f,
                fmt=self.fmt,
                prose=texts,
                sym=sym,
                key=self._key,
                term=self._term(f"template {template_name}"),
                stamp=self.stamp,
                version=__version__,
                **context,
            )
        except RlmapError as error:
            origin = f"template {template_name}"
            if error.message.startswith(origin):  # a sym() in the template: say where
                where = _template_location(error, template.filename or template_name)
                error.message = f"{where}{error.message[len(origin) :]}"
                error.args = (str(error),)
            raise
        except jinja2.UndefinedError as error:
            raise TemplateError(
                f"{_template_location(error, template.filename or template_name)}: {error.message}",
                "the template uses a value the page does not provide; fix the template",
            ) from None
        except jinja2.TemplateError as error:
            where = _template_location(error, template.filename or template_name)
            raise TemplateError(f"{where}: {error}", "fix the template") from None
        except (*_RUNTIME_ERRORS, AttributeError) as error:
            where = _template_location(error, template.filename or template_name)
            if isinstance(error, AttributeError) and _is_shipped(where):
                raise  # a shipped template's call went wrong: a bug in rlmap
            raise TemplateError(f"{where}: {_described(error)}", "fix the template") from None
        self._check_prose_shown(template_name, prose, shown or set(), _shown_template(template.filename or ""))
        return _tidy(text)

    def _check_prose_shown(
        self, template_name: str, prose: dict[str, Prose], shown: set[str], rendered: str = ""
    ) -> None:
        """A prose entry that neither a section nor a template of the page shows would vanish
        silently: an error instead (checked once the page rendered, so that a broken template
        reports itself first).  ``rendered``: the page's template, named when it is a user's
        (``--templates``, a profile's): the one that may have left the entry out."""
        used = self._prose_names(template_name)
        if used is not None:
            used |= shown
        for name, entry in sorted(prose.items()):
            if used is None or name in used:
                continue
            listed = ", ".join(sorted(used)) or "no prose"
            if rendered and not _is_shipped(rendered):
                raise TemplateError(
                    f"{entry.origin}: [prose.{entry.page}] {name} is shown neither by a section nor by the "
                    f"page's template {rendered}, which overrides rlmap's (they show: {listed})",
                    f"show it from {rendered} ({{{{ prose.{name} }}}}), or remove the key from the profile",
                )
            raise TemplateError(
                f"{entry.origin}: [prose.{entry.page}] {name} is shown by no template of the page (it shows: {listed})",
                "fix the key in your profile, or show it from the page's template",
            )


# What a template or prose entry can raise at run time from Python itself (a division by zero,
# a missing key, a runaway recursion): the user's text to fix, never a bug in rlmap.  An
# ``AttributeError`` (a formatter given a value of the wrong kind: ``f.sym(1)``) is the user's
# too when it comes from a user's template; from a shipped one it is a bug.
_RUNTIME_ERRORS = (ArithmeticError, LookupError, TypeError, ValueError, RecursionError, MemoryError)


def _described(error: BaseException) -> str:
    """What went wrong in a template, in a few words: the error's own, or, for one that has none
    (a ``MemoryError``), what it means."""
    text = str(error)
    if text:
        return f"{type(error).__name__}: {text}"
    if isinstance(error, MemoryError):
        return "MemoryError: it ran out of memory (a loop or a repeat builds values too large)"
    return type(error).__name__


def _name_argument(function: str, name: Any, origin: str) -> str:
    """The one argument of ``sym()``/``key()``/``term()``: a short string, nothing else."""
    if not isinstance(name, str) or not name or len(name) > 500:
        raise TemplateError(f"{origin}: {function}() takes one name as a string", f'write {function}("Name")')
    return name


def _prose_names_in(environment: jinja2.Environment, name: str, seen: set[str]) -> set[str]:
    """Every ``prose.X`` / ``prose["X"]`` a template (and the templates it includes) shows."""
    if name in seen or environment.loader is None:
        return set()
    seen.add(name)
    source, _, _ = environment.loader.get_source(environment, name)
    tree = environment.parse(source)
    found: set[str] = set()
    for node in tree.find_all((jinja2.nodes.Getattr, jinja2.nodes.Getitem)):
        owner: Any = node
        if isinstance(owner.node, jinja2.nodes.Name) and owner.node.name == "prose":
            if isinstance(owner, jinja2.nodes.Getattr):
                found.add(owner.attr)
            elif isinstance(owner.arg, jinja2.nodes.Const) and isinstance(owner.arg.value, str):
                found.add(owner.arg.value)
    for include in tree.find_all((jinja2.nodes.Include, jinja2.nodes.Extends, jinja2.nodes.Import)):
        target = getattr(include, "template", None)
        if isinstance(target, jinja2.nodes.Const) and isinstance(target.value, str):
            found |= _prose_names_in(environment, target.value, seen)
    return found


class _OptionalProse:
    """Prose entries by name (``prose.keys``); a profile without one renders nothing in its place."""

    def __init__(self, texts: dict[str, str]) -> None:
        self._texts = texts

    def __getattr__(self, name: str) -> str:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._texts.get(name, "")

    __getitem__ = __getattr__


def _template_location(error: BaseException, filename: str) -> str:
    """``path/to/template.j2:LINE`` from a rendering error: the innermost template frame (jinja
    rewrites its traceback to template lines), which may be a template the page includes."""
    line = 0
    trace = error.__traceback__
    while trace is not None:
        code = trace.tb_frame.f_code.co_filename
        if code == filename or code.endswith(".j2"):
            filename, line = code, trace.tb_lineno
        trace = trace.tb_next
    shown = _shown_template(filename)
    return f"{shown}:{line}" if line else shown


def _is_shipped(where: str) -> bool:
    """Whether a :func:`_template_location` names one of the templates rlmap ships."""
    return where.startswith("templates/")


def _shown_template(filename: str) -> str:
    """A shipped template as ``templates/name.j2``; a user's as the path it was given by."""
    path = Path(filename)
    shipped = shipped_templates()
    if path.is_relative_to(shipped):
        return f"templates/{path.relative_to(shipped).as_posix()}"
    return filename


def _tidy(text: str) -> str:
    """At most one blank line in a row, no trailing spaces, one final newline."""
    lines = [line.rstrip() for line in text.splitlines()]
    tidy: list[str] = []
    for line in lines:
        if not line and tidy and not tidy[-1]:
            continue
        tidy.append(line)
    while tidy and not tidy[-1]:
        tidy.pop()
    return "\n".join(tidy) + "\n"
