"""Static claims evaluated against the code: each holds at a line, or generation fails.

The code model answers calls, attribute writes and key accesses; the statements, conditions,
``raise`` and ``warnings.warn`` messages of one function are read from its source with
:mod:`ast` (parsed, never imported or run).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

from rlmap.errors import ConfigError, RlmapError
from rlmap.index.lines import one_line
from rlmap.index.records import READ, WRITE, Symbol
from rlmap.literals import unparse
from rlmap.model.codemodel import CodeModel
from rlmap.pages.claims import (
    CallsClaim,
    Claim,
    Claims,
    CodeClaim,
    DefaultClaim,
    DocstringClaim,
    RaisesClaim,
    ReadsKeyClaim,
    ValueClaim,
    WarnsClaim,
    WritesAttributeClaim,
    WritesKeyClaim,
)
from rlmap.pages.refs import Anchor, Refs


@dataclass(frozen=True, slots=True)
class Held:
    """A claim that holds, and the line that shows it (``text``: that line's code, or the message)."""

    claim: Claim
    anchor: Anchor | None
    text: str
    function: str  # qualname the check looked in ("" for runtime claims)
    guard: str = ""  # the conditions the line runs under, " / "-joined


@dataclass(frozen=True, slots=True)
class Statement:
    line: int
    end: int
    text: str  # the statement's source, whitespace folded (a compound statement: its header)
    guards: tuple[str, ...]


_SHOWN = 120  # characters of a deciding line a page shows


class ClaimsFailed(ConfigError):
    """Static claims that no longer hold, each of them in ``problems`` (a page that shows one
    fails on it again: :func:`rlmap.pages.compose.build_pages` lists each problem once)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(
            f"{len(problems)} curated claim(s) no longer hold:\n" + "\n".join(f"  - {p}" for p in problems),
            "the code changed: fix the curated words the claim backs and the claim itself",
        )
        self.problems = tuple(problems)


def _fold(text: str) -> str:
    """Code on one line, as written there (white space, comments and a comma before a closing
    bracket are not compared): a statement spanning lines, as black writes it, matches the same
    code written on one."""
    return _TRAILING_COMMA.sub(r"\1", one_line(_without_comments(text)))


def _within(guards: tuple[str, ...], condition: str) -> bool:
    """Whether one of a line's ``guards`` mentions ``condition`` (both folded)."""
    return any(condition in guard for guard in guards)


_TRAILING_COMMA = re.compile(r",\s*([)\]}])")


def _without_comments(text: str) -> str:
    """``text`` without its comments (found by Python's tokenizer, so a ``#`` in a string stays)."""
    if "#" not in text:
        return text
    lines = text.split("\n")
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                row, column = token.start
                lines[row - 1] = lines[row - 1][:column]
    except (tokenize.TokenError, SyntaxError):  # (a header cut mid-bracket: the comments met so far)
        pass
    return "\n".join(lines)


def segment(lines: list[str], node: ast.AST) -> str:
    """The source text of ``node`` (what ``ast.get_source_segment`` gives, without re-splitting
    the file at every call: the lines are split once)."""
    start, end = getattr(node, "lineno", 0), getattr(node, "end_lineno", None)
    first, last = getattr(node, "col_offset", 0), getattr(node, "end_col_offset", None)
    if not start or end is None or last is None or end > len(lines):
        return ""
    chunk = [line.encode() for line in lines[start - 1 : end]]
    if len(chunk) == 1:
        return chunk[0][first:last].decode(errors="replace")
    chunk[0], chunk[-1] = chunk[0][first:], chunk[-1][:last]
    return b"\n".join(chunk).decode(errors="replace")


def _header(node: ast.stmt, source: list[str]) -> str:
    """A compound statement's first line(s) up to its body; a simple statement whole."""
    segment_text = segment(source, node)
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and not isinstance(node, ast.ClassDef | ast.FunctionDef):
        lines = segment_text.split("\n")
        return "\n".join(lines[: max(1, body[0].lineno - node.lineno)])
    return segment_text


_LEAVES = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def statements(source: list[str], node: ast.AST) -> list[Statement]:
    """Every statement under ``node`` with the conditions that enclose it (``if x`` / ``not (x)``),
    and those an earlier ``if x:`` that always leaves the block (``return``, ``raise``, ``continue``,
    ``break``) puts on the statements after it: they run only under ``not (x)``."""
    found: list[Statement] = []

    def walk(body: list[ast.stmt], guards: tuple[str, ...]) -> None:
        for stmt in body:
            found.append(Statement(stmt.lineno, stmt.end_lineno or stmt.lineno, _fold(_header(stmt, source)), guards))
            if isinstance(stmt, ast.If):
                test = _fold(segment(source, stmt.test))
                walk(stmt.body, (*guards, f"if {test}"))
                walk(stmt.orelse, (*guards, f"not ({test})"))
                if stmt.body and isinstance(stmt.body[-1], _LEAVES):
                    guards = (*guards, f"not ({test})")  # (the rest of this block)
            elif isinstance(stmt, ast.For | ast.AsyncFor):
                header = f"for {_fold(segment(source, stmt.target))} in {_fold(segment(source, stmt.iter))}"
                walk(stmt.body, (*guards, header))
                walk(stmt.orelse, guards)
            elif isinstance(stmt, ast.While):
                walk(stmt.body, (*guards, f"while {_fold(segment(source, stmt.test))}"))
                walk(stmt.orelse, guards)
            elif isinstance(stmt, ast.With | ast.AsyncWith):
                items = ", ".join(_fold(segment(source, item.context_expr)) for item in stmt.items)
                walk(stmt.body, (*guards, f"with {items}"))
            elif isinstance(stmt, ast.Try):
                walk(stmt.body, guards)
                for handler in stmt.handlers:
                    kind = _fold(segment(source, handler.type)) if handler.type else ""
                    walk(handler.body, (*guards, f"except {kind}".strip()))
                walk(stmt.orelse, guards)
                walk(stmt.finalbody, guards)
            elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                walk(stmt.body, (*guards, f"in {stmt.name}"))
            elif isinstance(stmt, ast.Match):
                for case in stmt.cases:
                    walk(case.body, guards)

    body = getattr(node, "body", [])
    walk(body if isinstance(body, list) else [], ())
    return found


def _line_holding(source: list[str], statement: Statement, wanted: str) -> int:
    """The line of a statement spread over lines that holds the code claimed whole (one entry of
    a dict written over lines: not the ``kwargs = {`` it opens with); else its first line."""
    for number in range(statement.line + 1, min(statement.end, len(source)) + 1):
        if wanted in _fold(source[number - 1]):
            return number
    return statement.line


def _followed_by(node: ast.AST, line: int, wanted: str, source: list[str]) -> bool:
    """Whether the statement at ``line`` under ``node`` is followed, in the block that holds it,
    by a statement holding ``wanted`` (itself or one nested in it): in one pass through that
    block, the statement at ``line`` runs first."""
    for holder in ast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(holder, field, None)
            if not isinstance(block, list):
                continue
            for place, stmt in enumerate(block):
                if isinstance(stmt, ast.stmt) and stmt.lineno == line:
                    return any(
                        isinstance(inner, ast.stmt) and wanted in _fold(_header(inner, source))
                        for later in block[place + 1 :]
                        for inner in ast.walk(later)
                    )
    return False


def message_text(node: ast.expr | None) -> str:
    """The literal words of a message expression: string constants, f-string parts, ``+`` and ``%``."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(message_text(value) if isinstance(value, ast.Constant) else "{}" for value in node.values)
    if isinstance(node, ast.BinOp):
        return message_text(node.left) + message_text(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return message_text(node.func.value)
    return ""


def _call_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


class ClaimChecker:
    """Evaluates static claims over one model and its source (each function parsed once)."""

    def __init__(self, model: CodeModel, refs: Refs) -> None:
        self.model = model
        self.refs = refs

    def check_all(self, claims: Claims) -> dict[str, Held]:
        """Every static claim's line; every claim that does not hold is reported, in one error."""
        held: dict[str, Held] = {}
        problems: list[str] = []
        for claim in claims.claims:
            if not claim.static:
                continue
            try:
                held[claim.id] = self.check(claim)
            except RlmapError as error:
                problems.append(error.message)
        if problems:
            raise ClaimsFailed(problems)
        return held

    def check(self, claim: Claim) -> Held:
        spec = claim.spec
        if not claim.static:
            return Held(claim, None, "", "")
        function = self.refs.lookup(spec.in_, claim.origin)  # type: ignore[union-attr]
        if isinstance(spec, CodeClaim):
            return self._code(claim, function, spec)
        if isinstance(spec, CallsClaim):
            return self._calls(claim, function, spec)
        if isinstance(spec, WritesAttributeClaim):
            return self._writes_attribute(claim, function, spec)
        if isinstance(spec, RaisesClaim | WarnsClaim):
            return self._message(claim, function, spec)
        if isinstance(spec, WritesKeyClaim | ReadsKeyClaim):
            return self._key(claim, function, spec)
        if isinstance(spec, DocstringClaim):
            return self._docstring(claim, function, spec)
        if isinstance(spec, DefaultClaim):
            return self._default(claim, function, spec)
        assert isinstance(spec, ValueClaim)
        return self._value(claim, function, spec)

    # -- the checks -------------------------------------------------------------------------
    def _fail(self, claim: Claim, message: str) -> ConfigError:
        return ConfigError(f"{claim.origin} ({claim.kind}): {message}", "")

    def _held(
        self, claim: Claim, function: str, line: int, text: str, guards: tuple[str, ...] = (), shown: str = ""
    ) -> Held:
        path = self.model.path_of(function)
        # the anchor is named by the code on its line, so a page shows the line it links to
        shown = shown or self.refs.line_text(path, line).strip()[:_SHOWN] or function.rsplit(".", 1)[-1]
        anchor = self.refs.anchor(shown, path, line)
        return Held(claim, anchor, text, function, " / ".join(guards))

    def _parsed(self, function: str) -> tuple[list[str], ast.AST] | None:
        symbol = self.model.symbol(function)
        if symbol is None:
            return None
        node = self.refs.definition(symbol)
        if node is None:
            return None
        return self.refs.source_lines(symbol.path), node

    def _code(self, claim: Claim, function: str, spec: CodeClaim) -> Held:
        parsed = self._parsed(function)
        if parsed is None:
            raise self._fail(claim, f"'{function}' is not a class or function whose source rlmap reads")
        wanted = _fold(spec.code)
        matches = [s for s in statements(*parsed) if wanted in s.text]
        if not matches:
            raise self._fail(claim, f"{function} holds no statement with {spec.code!r}")
        if spec.under:
            under = _fold(spec.under)
            guarded = [s for s in matches if _within(s.guards, under)]
            if not guarded:
                conditions = "; ".join(" / ".join(s.guards) or "(none)" for s in matches)
                raise self._fail(claim, f"{spec.code!r} in {function} is not under {spec.under!r} ({conditions})")
            matches = guarded
        if spec.before:
            later = _fold(spec.before)
            ordered = [s for s in matches if _followed_by(parsed[1], s.line, later, parsed[0])]
            if not ordered:
                lines = ", ".join(str(s.line) for s in matches)
                raise self._fail(claim, f"no statement with {spec.before!r} follows line {lines} in its block")
            matches = ordered
        best = min(matches, key=lambda s: (s.end - s.line, s.line))
        return self._held(claim, function, _line_holding(parsed[0], best, wanted), best.text, best.guards)

    def _calls(self, claim: Claim, function: str, spec: CallsClaim) -> Held:
        target = self.refs.lookup(spec.target, claim.origin) if spec.target else ""
        sites = []
        wanted = _fold(spec.callee or "")
        for site in self.model.call_sites(function):
            if target:
                hit = any(t == target or t.startswith(f"{target}.") for t in site.targets)
            else:
                # the callee as written, whole: ``self._policy`` is not ``self._policy_uncompiled.parameters``
                written = _fold(site.callee_text)
                hit = bool(wanted) and (written == wanted or written.endswith("." + wanted))
            if hit:
                sites.append(site)
        what = target or spec.callee
        if not sites:
            raise self._fail(claim, f"{function} does not call {what}")
        if spec.only_under:
            only_under = _fold(spec.only_under)
            free = [s for s in sites if not _within(s.guards, only_under)]
            if free:
                raise self._fail(claim, f"{function} calls {what} at line {free[0].line} without {spec.only_under!r}")
        if spec.always:
            # ``not (c)`` guards come from an earlier ``if c: raise/return``: an input check, not a branch
            branches = [(s, g) for s in sites for g in s.guards if not g.startswith("not (")]
            if branches:
                site, guard = branches[0]
                raise self._fail(claim, f"{function} calls {what} at line {site.line} under {guard!r}")
        if spec.under:
            under = _fold(spec.under)
            sites = [s for s in sites if _within(s.guards, under)]
            if not sites:
                raise self._fail(claim, f"{function} never calls {what} under {spec.under!r}")
        site = sites[0]
        return self._held(claim, function, site.line, site.callee_text, site.guards)

    def _writes_attribute(self, claim: Claim, function: str, spec: WritesAttributeClaim) -> Held:
        owner = function.rpartition(".")[0]
        attribute = self.model.find_member(owner, spec.attribute) or f"{owner}.{spec.attribute}"
        rows = [
            access
            for access in self.model.attribute_accesses(attribute)
            if access.function == function and access.kind in (WRITE, "augmented")
        ]
        if spec.value:
            value = _fold(spec.value)
            rows = [access for access in rows if value in _fold(access.value)]
        if spec.under:
            under = _fold(spec.under)
            rows = [access for access in rows if _within(access.guards, under)]
        if not rows:
            detail = f" with a value mentioning {spec.value!r}" if spec.value else ""
            detail += f" under {spec.under!r}" if spec.under else ""
            raise self._fail(claim, f"{function} does not write self.{spec.attribute}{detail}")
        row = rows[0]
        return self._held(claim, function, row.line, f"self.{spec.attribute} = {row.value}", row.guards)

    def _message(self, claim: Claim, function: str, spec: RaisesClaim | WarnsClaim) -> Held:
        parsed = self._parsed(function)
        if parsed is None:
            raise self._fail(claim, f"'{function}' is not a function whose source rlmap reads")
        _, node = parsed
        for inner in ast.walk(node):
            if isinstance(spec, RaisesClaim) and isinstance(inner, ast.Raise) and isinstance(inner.exc, ast.Call):
                if _call_name(inner.exc.func) != spec.exception:
                    continue
                message = message_text(inner.exc.args[0] if inner.exc.args else None)
            elif isinstance(spec, WarnsClaim) and isinstance(inner, ast.Call) and _call_name(inner.func) == "warn":
                message = message_text(inner.args[0] if inner.args else None)
            else:
                continue
            if spec.message in message:
                return self._held(claim, function, inner.lineno, message)
        verb = f"raises no {spec.exception}" if isinstance(spec, RaisesClaim) else "warns nothing"
        raise self._fail(claim, f"{function} {verb} with a message holding {spec.message!r}")

    def _key(self, claim: Claim, function: str, spec: WritesKeyClaim | ReadsKeyClaim) -> Held:
        key = tuple(spec.key) if isinstance(spec.key, list) else (spec.key,)
        kinds = (WRITE,) if isinstance(spec, WritesKeyClaim) else (READ, "check")
        rows = [a for a in self.model.key_accesses(key) if a.function == function and a.kind in kinds]
        if not rows:
            verb = "write" if isinstance(spec, WritesKeyClaim) else "read"
            raise self._fail(claim, f"{function} does not {verb} the key {key!r}")
        row = min(rows, key=lambda a: a.line)
        line = self.refs.line_text(self.model.path_of(function), row.line).strip()
        return self._held(claim, function, row.line, line or row.how, row.guards)

    def _value(self, claim: Claim, name: str, spec: ValueClaim) -> Held:
        symbol = self.model.symbol(name)
        if symbol is None or _fold(spec.value) not in _fold(symbol.value):
            raise self._fail(claim, f"{name} is not assigned a value mentioning {spec.value!r}")
        return self._held(claim, name, symbol.line, symbol.value)

    def _default(self, claim: Claim, function: str, spec: DefaultClaim) -> Held:
        parsed = self._parsed(function)
        node = parsed[1] if parsed is not None else None
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            raise self._fail(claim, f"'{function}' is not a function whose source rlmap reads")
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults: dict[str, ast.expr | None] = dict.fromkeys((a.arg for a in positional), None)
        with_default = positional[len(positional) - len(arguments.defaults) :]  # the last ones have one
        defaults.update(zip((a.arg for a in with_default), arguments.defaults, strict=True))
        defaults.update(zip((a.arg for a in arguments.kwonlyargs), arguments.kw_defaults, strict=True))
        where = {a.arg: a for a in (*positional, *arguments.kwonlyargs)}
        if spec.parameter not in where:
            raise self._fail(claim, f"{function} has no parameter {spec.parameter!r}")
        default = defaults[spec.parameter]
        written = unparse(default) if default is not None else ""
        try:  # compared as expressions: quotes and spacing as the claim likes
            wanted = ast.dump(ast.parse(spec.value.strip(), mode="eval").body)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise self._fail(claim, f"'value' {spec.value!r} is not a Python expression") from None
        if default is None or ast.dump(default) != wanted:
            found = f"defaults to {written!r}" if written else "has no default"
            raise self._fail(claim, f"the parameter {spec.parameter!r} of {function} {found}, not {spec.value!r}")
        line = where[spec.parameter].lineno
        return self._held(claim, function, line, f"{spec.parameter}={written}")

    def _docstring(self, claim: Claim, name: str, spec: DocstringClaim) -> Held:
        symbol = self.model.symbol(name)
        docstring = _fold(self.refs.docstring(symbol)) if symbol is not None else ""
        if _fold(spec.text) not in docstring:
            raise self._fail(claim, f"the docstring of {name} does not say {spec.text!r}")
        assert symbol is not None
        line = self._docstring_line(symbol, " ".join(spec.text.split()))
        if line is None:  # (the words span an escape the source writes otherwise): the definition
            return self._held(claim, name, symbol.line, spec.text, shown=name.rsplit(".", 1)[-1])
        return self._held(claim, name, line, spec.text)

    def _docstring_line(self, symbol: Symbol, wanted: str) -> int | None:
        """The line of the docstring's source where ``wanted`` (its words, each space one) starts:
        the last line from which the docstring's lines, read on, hold it."""
        lines = self.refs.docstring_lines(symbol)
        texts = [self.refs.line_text(symbol.path, line) for line in lines]
        for place in range(len(texts) - 1, -1, -1):
            if wanted in " ".join(" ".join(texts[place:]).split()):
                return lines[place]
        return None
