"""Rendering: the one place that configures jinja2 and knows rst and Markdown syntax.

Templates (one per page kind, shared by both formats) receive a prepared context and a
formatter ``f`` whose methods emit correct rst or Markdown for anchors, symbols, tables,
code and diagrams.  ``StrictUndefined`` makes a missing context value an error; curated prose
is itself rendered as jinja so that ``sym("Name")`` resolves at generation time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import jinja2.nodes
import jinja2.sandbox

from rlmap import __version__
from rlmap.errors import RlmapError
from rlmap.pages.diagrams import Diagram
from rlmap.pages.profile import Prose
from rlmap.pages.refs import Anchor, Ref, Refs

# Text copied from the analysed tree (docstring lines, code, keys) is one line and bounded on a
# page: a hostile file cannot break out of its line or inflate the pages.
MAX_TEXT = 500
MAX_CODE = 2000
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def inline(value: Any, limit: int) -> str:
    """``value`` as one line (control characters and line breaks become a space), at most ``limit`` long."""
    text = _CONTROL.sub(" ", str(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


_LITERAL = re.compile(r"``[^`]+``")


def keep_literals(text: str, escape: Any) -> str:
    """``escape`` applied to everything but ````double-backtick literals```` (code in both formats)."""
    parts = []
    position = 0
    for match in _LITERAL.finditer(text):
        parts.append(escape(text[position : match.start()]))
        parts.append(match.group())
        position = match.end()
    parts.append(escape(text[position:]))
    return "".join(parts)


class TemplateError(RlmapError):
    """A template or a prose entry that cannot be rendered."""


class Formatter:
    """Shared helpers; subclasses implement one markup language."""

    ext = ""

    def __init__(self) -> None:
        self.slug = ""  # the page being rendered
        self.sections: dict[str, str] = {}
        self.terms: dict[str, str] = {}  # term or alias (lower case) -> term

    def section(self, ident: str, level: int = 2) -> str:
        """A section heading from the page's section table, with a label others can link to."""
        title = self.sections[ident]
        return self.label(f"rlmap_{self.slug}_{ident}") + "\n" + self.heading(title, level)

    def glossary_term(self, name: str) -> str:
        term = self.terms.get(name.lower())
        if term is None:
            raise TemplateError(f"'{name}' is no glossary term", "add it to the glossary or fix the name")
        return self.term_link(name, term)

    def term_link(self, text: str, term: str) -> str:
        raise NotImplementedError

    def heading(self, text: str, level: int = 1) -> str:
        raise NotImplementedError

    def label(self, name: str) -> str:
        raise NotImplementedError

    def text(self, value: Any) -> str:
        return str(value)

    def sym(self, ref: Ref) -> str:
        """A symbol: its role (when public) or literal name, then its source anchor."""
        name = self.symbol_name(ref)
        return f"{name} ({self.src(ref.anchor)})" if ref.anchor else name

    def at(self, anchor: Anchor | None) -> str:
        """An anchor after the name its line holds: ``name`` (path:line)."""
        if anchor is None:
            return "(no source)"
        return f"{self.code(anchor.name)} ({self.src(anchor)})"

    def target(self, value: Ref | str) -> str:
        return self.sym(value) if isinstance(value, Ref) else self.code(value)

    def symbol_name(self, ref: Ref) -> str:
        raise NotImplementedError

    def code(self, text: str) -> str:
        raise NotImplementedError

    def src(self, anchor: Anchor | None) -> str:
        raise NotImplementedError


class RstFormatter(Formatter):
    ext = "rst"

    def text(self, value: Any) -> str:
        """Plain prose from the code (docstring lines): one bounded line, rst markup neutralised
        but for ````inline literals````, whose content rst never interprets."""
        text = keep_literals(inline(value, MAX_TEXT), self._escape)
        if re.match(r"\.\.|_|\[", text):  # explicit markup (a directive, a target) at a paragraph start
            text = "\\" + text
        return text

    @staticmethod
    def _escape(text: str) -> str:
        text = re.sub(r"([\\*|`])", r"\\\1", text)
        text = re.sub(r"(\w):(?=\S)", r"\1\\:", text)  # no standalone URI (``javascript:...``) becomes a link
        return re.sub(r"([\w\]])_(?=\W|$)", r"\1\\_", text)

    def heading(self, text: str, level: int = 1) -> str:
        underline = "=-~^"[level - 1] * len(text)
        return f"{text}\n{underline}" if level > 1 else f"{'=' * len(text)}\n{text}\n{'=' * len(text)}"

    def label(self, name: str) -> str:
        return f".. _{name}:\n"

    def code(self, text: str) -> str:
        text = inline(text, MAX_CODE)
        if not text.strip():
            return "(none)"
        if "``" in text or text != text.strip():
            return ":code:`" + text.strip().replace("\\", "\\\\").replace("`", "\\`") + "`"
        return f"``{text}``"

    def src(self, anchor: Anchor | None) -> str:
        if anchor is None:
            return "(no source)"
        if not anchor.url:
            return f"``{anchor.location}``"
        return f"`{anchor.location} <{anchor.url}>`__"

    def symbol_name(self, ref: Ref) -> str:
        if ref.role:
            return f":{ref.role}:`{ref.display} <{ref.target}>`"
        return self.code(ref.display)

    def link(self, title: str, document: str) -> str:
        return f":doc:`{title} <{document}>`"

    def section_link(self, title: str, slug: str, ident: str) -> str:
        return f":ref:`{title} <rlmap_{slug}_{ident}>`"

    def term_link(self, text: str, term: str) -> str:
        return f":term:`{text} <{term}>`" if text.lower() != term.lower() else f":term:`{term}`"

    def external(self, title: str, url: str) -> str:
        return f"`{title} <{url}>`__"

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        if not rows:
            return "(none)\n"
        lines = [".. list-table::", "   :header-rows: 1", ""]
        for index, row in enumerate([list(headers), *[list(r) for r in rows]]):
            del index
            for column, cell in enumerate(row):
                marker = "* -" if column == 0 else "  -"
                text = str(cell).replace("\n", " ") or " "
                lines.append(f"   {marker} {text}")
        return "\n".join(lines) + "\n"

    def codeblock(self, lines: Sequence[str], language: str = "python") -> str:
        body = "\n".join(f"   {line}" if line else "" for line in lines)
        return f".. code-block:: {language}\n\n{body}\n"

    def literal_block(self, text: str) -> str:
        return "::\n\n" + "\n".join(f"   {line}" for line in text.splitlines()) + "\n"

    def diagram(self, diagram: Diagram) -> str:
        return f".. graphviz:: {diagram.name}.dot\n"

    def toctree(self, documents: Sequence[str]) -> str:
        body = "\n".join(f"   {document}" for document in documents)
        return f".. toctree::\n   :maxdepth: 1\n\n{body}\n"


class MarkdownFormatter(Formatter):
    ext = "md"

    def heading(self, text: str, level: int = 1) -> str:
        return f"{'#' * level} {text}"

    def label(self, name: str) -> str:
        del name
        return ""

    def text(self, value: Any) -> str:
        """Plain prose from the code: one bounded line, Markdown/MyST markup and raw HTML neutralised."""
        return keep_literals(inline(value, MAX_TEXT), lambda part: re.sub(r"([\\`*_\[\]<>|{}&#!~])", r"\\\1", part))

    def code(self, text: str) -> str:
        text = inline(text, MAX_CODE)
        if not text.strip():
            return "(none)"
        longest = max((len(run) for run in re.findall("`+", text)), default=0)
        fence = "`" * (longest + 1)
        padding = " " if longest else ""
        return f"{fence}{padding}{text}{padding}{fence}"

    def src(self, anchor: Anchor | None) -> str:
        if anchor is None:
            return "(no source)"
        if not anchor.url:
            return f"`{anchor.location}`"
        return f"[{anchor.location}]({anchor.url})"

    def symbol_name(self, ref: Ref) -> str:
        return self.code(ref.display)

    def link(self, title: str, document: str) -> str:
        return f"[{title}]({document}.md)"

    def section_link(self, title: str, slug: str, ident: str) -> str:
        del ident
        return f"[{title}]({slug}.md#{heading_anchor(title)})"

    def term_link(self, text: str, term: str) -> str:
        return f"[{text}](glossary.md#{heading_anchor(term)})"

    def external(self, title: str, url: str) -> str:
        return f"[{title}]({url})"

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        if not rows:
            return "(none)\n"

        def cell(value: Any) -> str:
            return str(value).replace("\n", " ").replace("|", "\\|") or " "

        lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
        lines.extend("| " + " | ".join(cell(value) for value in row) + " |" for row in rows)
        return "\n".join(lines) + "\n"

    def codeblock(self, lines: Sequence[str], language: str = "python") -> str:
        return f"```{language}\n" + "\n".join(lines) + "\n```\n"

    def literal_block(self, text: str) -> str:
        return "```text\n" + text + "\n```\n"

    def diagram(self, diagram: Diagram) -> str:
        return "```mermaid\n" + diagram.mermaid + "```\n"

    def toctree(self, documents: Sequence[str]) -> str:
        del documents
        return ""


def heading_anchor(title: str) -> str:
    """The anchor GitHub (and MyST with ``myst_heading_anchors``) gives a Markdown heading."""
    return re.sub(r"[^a-z0-9 _-]", "", title.lower()).replace(" ", "-")


FORMATTERS: dict[str, type[Formatter]] = {"rst": RstFormatter, "md": MarkdownFormatter}


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
        source, filename, uptodate = super().get_source(environment, template)
        real = Path(filename).resolve()
        if not any(real.is_relative_to(Path(base).resolve()) for base in self.searchpath):
            raise TemplateError(
                f"template '{template}' is a link to a file outside its template directory",
                "replace the symlink with the template itself",
            )
        return source, filename, uptodate


class _Sandbox(jinja2.sandbox.SandboxedEnvironment):
    """jinja2's sandbox (no attribute starting with ``_``, no unsafe callables, no ``str.format``
    escapes) plus bounds on string size, exponents and the total length of ``range`` loops.

    Every template and every prose entry is rendered here, shipped or not: the same rules
    everywhere, so a user template cannot rely on anything the shipped ones do not need.
    """

    intercepted_binops = frozenset({"*", "**", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._range_budget = MAX_RANGE_TOTAL
        self.globals.pop("lipsum", None)
        self.globals["range"] = self._range

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
        if operator == "%" and isinstance(left, str) and _WIDE_FORMAT.search(left):
            raise jinja2.sandbox.SecurityError("a %-format field wider than 9999 characters")
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value: Any) -> Any:
        wrapped = super().wrap_str_format(value)
        if wrapped is not None and _WIDE_FIELD.search(value.__self__):
            raise jinja2.sandbox.SecurityError("a format field wider than 9999 characters")
        return wrapped


_WIDE_FORMAT = re.compile(r"%[-+ #0]{0,8}(?:\*|[0-9]{5})")
_WIDE_FIELD = re.compile(r"\{[^{}]{0,100}?:[^{}]{0,20}?[0-9]{5}")


def make_environment(extra: Path | None = None, profile: Path | None = None) -> jinja2.Environment:
    return _Sandbox(
        loader=_ConfinedLoader(template_dirs(extra, profile)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # rst and Markdown, not HTML
    )


def _prose_environment() -> _Sandbox:
    """Where curated prose renders: the sandbox with no loader, so no include/import/extends."""
    return _Sandbox(undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False)


class Renderer:
    """Renders pages for one format, resolving curated references through :class:`Refs`."""

    def __init__(
        self, environment: jinja2.Environment, refs: Refs, fmt: str, stamp: str, terms: dict[str, str] | None = None
    ) -> None:
        self.environment = environment
        self.refs = refs
        self.f = FORMATTERS[fmt]()
        self.f.terms = terms or {}
        self.fmt = fmt
        self.stamp = stamp
        self._prose_environment = _prose_environment()

    def prose(self, entry: Prose | None) -> str:
        """Curated text with ``sym()``/``key()`` resolved; a dead name fails with file and line."""
        if entry is None:
            return ""
        try:
            self._prose_environment.reset_budget()
            template = self._prose_environment.from_string(entry.text)
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
        except _RUNTIME_ERRORS as error:
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
        if isinstance(self.environment, _Sandbox):
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
        except _RUNTIME_ERRORS as error:
            where = _template_location(error, template.filename or template_name)
            raise TemplateError(f"{where}: {type(error).__name__}: {error}", "fix the template") from None
        self._check_prose_shown(template_name, prose, shown or set())
        return _tidy(text)

    def _check_prose_shown(self, template_name: str, prose: dict[str, Prose], shown: set[str]) -> None:
        """A prose entry that neither a section nor a template of the page shows would vanish
        silently: an error instead (checked once the page rendered, so that a broken template
        reports itself first)."""
        used = self._prose_names(template_name)
        if used is not None:
            used |= shown
        for name, entry in sorted(prose.items()):
            if used is not None and name not in used:
                raise TemplateError(
                    f"{entry.origin}: [prose.{entry.page}] {name} is shown by no template of the page "
                    f"(it shows: {', '.join(sorted(used)) or 'no prose'})",
                    "fix the key in your profile, or show it from the page's template",
                )


# What a template or prose entry can raise at run time from Python itself (a division by zero,
# a missing key, a runaway recursion): the user's text to fix, never a bug in rlmap.
_RUNTIME_ERRORS = (ArithmeticError, LookupError, TypeError, ValueError, RecursionError, MemoryError)


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
