"""The rules over the docs: stale and unlinkable code references, broken labels, stale line anchors, missing paths.

Each rule is a function ``(context) -> findings``; :data:`REPORTS` says which rules each one
reports (``rlmap audit --rule X`` runs only the functions that report X).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from rlmap.audit.catalog import Edit, Finding
from rlmap.audit.context import EXTERNAL_PREFIX, AuditContext, is_private
from rlmap.audit.docscan import DocRef
from rlmap.audit.renames import Suggestion, first_missing, suggest_replacement
from rlmap.index.records import ATTRIBUTE, CLASS, FUNCTION, METHOD, MODULE, PROPERTY
from rlmap.literals import holds_word
from rlmap.pages.refs import INHERITED_LEFT_OUT, UNDOCUMENTED_LEFT_OUT, unlinked_because

_ROLE_KINDS: dict[str, tuple[str, ...]] = {
    "mod": (MODULE,),
    "class": (CLASS,),
    "exc": (CLASS,),
    "func": (FUNCTION,),
    "meth": (METHOD, PROPERTY),
    "attr": (ATTRIBUTE, PROPERTY),
    "data": (ATTRIBUTE, "variable"),
}
# the role that names a symbol of each kind
_ROLE_OF = {MODULE: "mod", CLASS: "class", FUNCTION: "func", METHOD: "meth", PROPERTY: "attr", ATTRIBUTE: "attr"}
_CODE_ROLES = frozenset({"class", "meth", "func", "attr", "mod", "data", "obj", "exc", "autodoc"})
_SPHINX_LABELS = frozenset({"genindex", "modindex", "search", "py-modindex"})
_BUILTINS = frozenset(dir(builtins))


def _within(dotted: str, package: str) -> bool:
    return dotted == package or dotted.startswith(package + ".")


def rule_refs(ctx: AuditContext) -> Iterable[Finding]:
    """stale-ref and unlinkable-ref."""
    for ref in ctx.docs.refs:
        if ref.kind in _CODE_ROLES or ref.kind == "literal":
            finding = _check_code_ref(ctx, ref)
            if finding is not None:
                yield replace(finding, column=ref.column)


def _check_code_ref(ctx: AuditContext, ref: DocRef) -> Finding | None:
    """What is wrong with one role or literal naming code, if anything."""
    target = ref.text.lstrip(".")
    if not target or target.split(".")[0] in _BUILTINS:
        return None
    in_package = _within(target, ctx.package)
    if ref.kind == "literal" and not in_package:
        return None  # ``env.reset`` and other instance-style literals are not references
    if not in_package and not _within(ref.module, ctx.package):
        return None  # no way to tell what Sphinx would resolve it against
    candidate = target if in_package else f"{ref.module}.{target}"
    resolved = ctx.resolve(candidate) or None
    if ref.kind == "autodoc" and resolved is None:  # an autosummary / autoclass entry: autodoc cannot import it
        message = f"the autodoc entry {ref.text} resolves to nothing in {ctx.model.source.stamp()}"
        found = suggest_replacement(ctx, candidate)
        edit = _edit(ref, ref.text.lstrip("."), found, relative_to="" if in_package else ref.module)
        return Finding.of(
            "stale-ref", ref.path, ref.line, ref.text, message, found.text, certain=found.certain, edit=edit
        )
    if ref.kind == "autodoc":
        return None  # it documents the object: whether roles to it link is the roles' question
    if ref.docstring_line and (resolved is not None or not in_package):
        # from docstrings, only full paths that resolve to nothing (a relative name there may be
        # relative to the documented class, which autodoc knows and the module does not say)
        return None
    shown = f":{ref.kind}:`{ref.text}`" if ref.kind != "literal" else f"``{ref.text}``"
    if resolved is not None:
        if ref.kind != "literal" and is_private(candidate) and not resolved.startswith(EXTERNAL_PREFIX):
            symbol = ctx.model.symbol(resolved)
            where = f"{symbol.path}:{symbol.line}" if symbol else resolved
            return Finding.of(
                "unlinkable-ref",
                ref.path,
                ref.line,
                ref.text,
                f"{shown} names a private object: Sphinx renders it as plain text, with no link",
                f"link the source instead ({where}) or name the public API that uses it",
            )
        if ref.kind != "literal" and not resolved.startswith(EXTERNAL_PREFIX):
            return _check_documented(ctx, ref, target, resolved, shown)
        return None
    if not in_package:
        if _beyond_what_docs_show(ctx, ref, target):
            return None
        # defined elsewhere with the role's kind; else of another kind (``:func:`clone``` for a
        # method): the role that fits it is suggested
        elsewhere = _defined_elsewhere(ctx, ref.kind, target) or _defined_elsewhere(ctx, "", target)
        if elsewhere:
            # the likeliest meant first: under the current module, then in the package, public, the
            # member of the most general class (the one the others override), short
            elsewhere.sort(
                key=lambda q: (
                    not q.startswith(ref.module + "."),
                    not q.startswith(ctx.package + "."),
                    is_private(ctx.public_or_qualname(q)),
                    -len(ctx.model.subclasses_of(q.rpartition(".")[0])),
                    len(ctx.public_or_qualname(q)),
                    q,
                )
            )
            public = ctx.public_or_qualname(elsewhere[0])
            kinds = _ROLE_KINDS.get(ref.kind)
            role = ref.kind if kinds is None or ctx.model.node_kind(elsewhere[0]) in kinds else None
            role = role or _ROLE_OF.get(ctx.model.node_kind(elsewhere[0]), ref.kind)
            more = f" (or one of {len(elsewhere) - 1} other definitions of that name)" if len(elsewhere) > 1 else ""
            message = f"{shown} is not found from the current module {ref.module}: Sphinx cannot link it"
            return Finding.of(
                "unlinkable-ref", ref.path, ref.line, ref.text, message, f"qualify it: :{role}:`~{public}`{more}"
            )
    message = f"{shown} resolves to nothing in {ctx.model.source.stamp()}"
    found = suggest_replacement(ctx, candidate)
    edit = _edit(ref, ref.text.lstrip("."), found, relative_to="" if in_package else ref.module)
    return Finding.of("stale-ref", ref.path, ref.line, ref.text, message, found.text, certain=found.certain, edit=edit)


def _edit(ref: DocRef, written: str, found: Suggestion, relative_to: str) -> Edit | None:
    """The exact replacement of a stale reference's text, when the suggestion is certain."""
    if not found.certain or not found.replacement or (ref.span is None and not ref.docstring_line):
        return None
    new = found.replacement
    if relative_to and new.startswith(relative_to + "."):
        new = new[len(relative_to) + 1 :]  # still relative to the current module
    if ref.docstring_line:  # through libcst, in the string literal starting on that line
        return Edit(0, 0, written, new, ref.docstring_line)
    assert ref.span is not None
    return Edit(ref.span[0], ref.span[1], written, new)


def rule_examples(ctx: AuditContext) -> Iterable[Finding]:
    """stale-example-ref: an import or dotted name of the package in a code example that resolves to nothing."""
    for ref in ctx.docs.refs:
        if ref.kind != "example" or not _within(ref.text, ctx.package):
            continue
        if first_missing(ctx, ref.text) is None:
            continue
        found = suggest_replacement(ctx, ref.text)
        what = "import of" if ref.is_import else "name"
        message = f"the example's {what} {ref.written} ({ref.text}) resolves to nothing in {ctx.model.source.stamp()}"
        # a name written in full is replaced; ``from m import Old``, see _import_edit
        edit = _edit(ref, ref.written, found, "") if ref.written == ref.text else _import_edit(ref, found)
        yield Finding.of(
            "stale-example-ref",
            ref.path,
            ref.line,
            ref.text,
            message,
            found.text,
            column=ref.column,
            certain=found.certain,
            edit=edit,
        )


def _import_edit(ref: DocRef, found: Suggestion) -> Edit | None:
    """``from m import Old`` rewritten as ``from m2 import New`` when ``m.Old`` certainly became
    ``m2.New`` and the code below does not use ``Old``: the name is unchanged (a move), or bound
    to another one (``as other``).  A renamed name the example uses stays for a person to rename."""
    if not ref.clause or not found.certain or "." not in found.replacement:
        return None
    module, _, name = found.replacement.rpartition(".")
    if name != ref.written and not ref.aliased:
        return None
    old_module = ref.text[: -len(ref.written) - 1]
    new = module + ref.clause[len(old_module) : -len(ref.written)] + name  # spacing and a "(" kept
    if ref.docstring_line:
        return Edit(0, 0, ref.clause, new, ref.docstring_line)
    if ref.clause_span is None:
        return None
    return Edit(ref.clause_span[0], ref.clause_span[1], ref.clause, new)


def _check_documented(ctx: AuditContext, ref: DocRef, target: str, resolved: str, shown: str) -> Finding | None:
    """unlinkable-ref for a role to a public object the docs tree documents under no path the role names.

    Sphinx links an unqualified role only to an object documented at exactly ``module.name``
    or ``name``: a re-export path (``torchrl.envs.InitTracker``) that the tree does not document
    renders as plain text, even when another path (``torchrl.envs.transforms.InitTracker``) is.
    """
    tree = ctx.docs.tree
    if tree is None or ref.text.startswith("."):  # no tree read, or Sphinx's suffix search
        return None
    written = [target] + ([f"{ref.module}.{target}"] if ref.module else [])
    reasons = [unlinked_because(tree, path, ctx.model, resolved) for path in written]
    if not all(reasons):
        return None
    documented = ctx.documented_path(resolved)
    left_out = next((reason for reason in reasons if reason in (INHERITED_LEFT_OUT, UNDOCUMENTED_LEFT_OUT)), "")
    if left_out and not documented:  # its class is documented, autodoc does not show this member
        message = f"{shown} names a member autodoc does not show: {left_out}; Sphinx renders no link"
        hint = "give it a docstring or document it with its own directive, or write it as a literal"
        if left_out == INHERITED_LEFT_OUT:
            hint = "name the class that defines it, or write it as a literal"
        return Finding.of("unlinkable-ref", ref.path, ref.line, ref.text, message, hint)
    message = f"{shown} names an object the docs tree does not document under that path: Sphinx renders no link"
    if documented:
        hint = f"name the documented path: :{ref.kind}:`~{documented}`"
    else:
        symbol = ctx.model.symbol(resolved)
        where = f" ({ctx.code_path(symbol.path)}:{symbol.line})" if symbol else ""
        hint = f"the docs tree documents it under no path: document it, or write it as a literal{where}"
    return Finding.of("unlinkable-ref", ref.path, ref.line, ref.text, message, hint)


def _beyond_what_docs_show(ctx: AuditContext, ref: DocRef, target: str) -> bool:
    """An unresolved relative reference whose meaning depends on context the scan cannot see."""
    first = target.partition(".")[0]
    head = ctx.resolve(f"{ref.module}.{first}") if "." in target else ""
    if head is None and first[:1].isupper() and ctx.members_used(first):
        return False  # ``Old.rollout`` where the class ``Old`` has vanished: stale, and a rename to infer
    if head is None or (head and head.startswith(EXTERNAL_PREFIX)):
        return True  # ``env.reset``-style or another package's name
    # a member of the documented class, or another package: context we cannot see
    return "." not in target and ref.kind in ("meth", "attr", "mod")


def _defined_elsewhere(ctx: AuditContext, kind: str, target: str) -> list[str]:
    """The symbols of the role's kind whose qualified name ends with ``target``; not one defined
    inside a function (``Transform.inv.clone``): no role can name a local."""
    kinds = _ROLE_KINDS.get(kind) if kind else None  # ("": any kind)
    return [
        q
        for q in ctx.named(target.rsplit(".", 1)[-1])
        if q.endswith("." + target)
        and (kinds is None or ctx.model.node_kind(q) in kinds)
        and ctx.model.node_kind(q.rpartition(".")[0]) not in _LOCAL_SCOPES
    ]


_LOCAL_SCOPES = (FUNCTION, METHOD)  # what a symbol defined in is a local of a call, not a name Sphinx documents


def rule_labels(ctx: AuditContext) -> Iterable[Finding]:
    for ref in ctx.docs.refs:
        if ref.docstring_line:
            continue  # labels a docstring names may be defined by the pages that include it
        if ref.kind == "ref" and ref.text not in ctx.docs.labels and ref.text not in _SPHINX_LABELS:
            close = ctx.close_matches("labels", ref.text, 1, 0.6)
            hint = f"did you mean {close[0]}?" if close else "define the label (.. _name:) or fix the reference"
            message = f":ref:`{ref.text}` names no label in the docs"
            yield Finding.of("broken-label", ref.path, ref.line, ref.text, message, hint, column=ref.column)
        elif ref.kind == "doc" and not _document_exists(ctx.docs.documents, ref):
            yield Finding.of(
                "broken-label",
                ref.path,
                ref.line,
                ref.text,
                f":doc:`{ref.text}` names no document in the docs",
                "fix the document name (relative to this page, or absolute from the docs root)",
                column=ref.column,
            )


def _document_exists(documents: frozenset[str], ref: DocRef) -> bool:
    """Whether a ``:doc:`` target names a document, from the page's folder or any folder above it."""
    target = ref.text
    if target.startswith("/"):  # from the docs root, which may be any folder above the documents given
        absolute = _normal(target)
        # a document given as a lone file is known by its name only
        return any(
            document == absolute or document.endswith("/" + absolute) or absolute.endswith("/" + document)
            for document in documents
        )
    folder = Path(ref.path).parent.parts
    candidates = {target.lstrip("/")}
    for part in range(len(folder) + 1):
        base = Path(*folder[part:]) if part < len(folder) else Path()
        candidates.add((base / target).as_posix())
    return any(_normal(c) in documents for c in candidates)


def _normal(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def rule_line_anchors(ctx: AuditContext) -> Iterable[Finding]:
    for ref in ctx.docs.refs:
        if ref.kind != "anchor":
            continue
        yield from _check_anchor(ctx, ref.path, ref.line, ref.text, ref.anchor_line, ref.beside)


def _check_anchor(
    ctx: AuditContext, where: str, line: int, written: str, target_line: int, beside: str
) -> Iterable[Finding]:
    matches = ctx.anchor_files(written)
    name = f"{written}:{target_line}"
    if not matches and ctx.in_package(written):  # (a file of another project is not ours to judge)
        same = ctx.files_named(written.rpartition("/")[2])
        hint = (
            f"a file of that name is at {' and '.join(same[:3])}{' (and more)' if len(same) > 3 else ''}; "
            "better, refer to the symbol by name"
            if same
            else "refer to the symbol by name instead of a line"
        )
        yield Finding.of(
            "stale-line-anchor", where, line, name, f"{written} does not exist in the {ctx.package} source", hint
        )
        return
    if len(matches) != 1:
        return
    path = matches[0]
    lines = ctx.lines(path)
    if lines is None:
        return
    if target_line > len(lines):
        message = f"{name} is past the end of {path} ({len(lines)} lines)"
        yield Finding.of(
            "stale-line-anchor", where, line, name, message, "refer to the symbol by name instead of a line"
        )
        return
    if not beside or _holds(lines, target_line, beside):
        return
    current = ctx.defined_in(path, beside)
    if current is not None:
        public = ctx.public_or_qualname(current.qualname)
        hint = f"{beside} is now at {path}:{current.line}; better, refer to {public} by name"
    else:
        hint = f"{beside} is not defined in {path} any more; refer to code by name"
    message = f"{name} no longer holds {beside} (it holds: {lines[target_line - 1].strip()[:60]!r})"
    yield Finding.of("stale-line-anchor", where, line, name, message, hint)


def _holds(lines: list[str], number: int, name: str) -> bool:
    """Whether line ``number`` holds ``name`` as a whole word (``rollout`` is not in
    ``self._final_rollout``); at a decorator, whether the ``def`` or ``class`` it decorates names
    it (``inspect`` and Sphinx's ``linkcode`` give a decorated function's first decorator)."""
    line = lines[number - 1]
    if holds_word(line, name):
        return True
    if not line.lstrip().startswith("@"):
        return False
    for following in lines[number : number + _DECORATOR_LINES]:
        header = following.lstrip()
        if header.startswith(("def ", "async def ", "class ")):
            return holds_word(header, name)
    return False


_DECORATOR_LINES = 40  # the most lines read after a decorator for the definition it decorates


def rule_paths(ctx: AuditContext) -> Iterable[Finding]:
    if not ctx.is_checkout:
        return
    exists: dict[str, bool] = {}
    for ref in ctx.docs.refs:
        if ref.kind != "path":
            continue
        if ref.text not in exists:
            exists[ref.text] = (ctx.root / ref.text).exists()
        if not exists[ref.text]:
            message = f"{ref.text} does not exist in the checkout"
            yield Finding.of(
                "missing-path", ref.path, ref.line, ref.text, message, "fix the path or remove the reference"
            )


REPORTS: dict[Callable[[AuditContext], Iterable[Finding]], frozenset[str]] = {
    rule_refs: frozenset({"stale-ref", "unlinkable-ref"}),
    rule_examples: frozenset({"stale-example-ref"}),
    rule_labels: frozenset({"broken-label"}),
    rule_line_anchors: frozenset({"stale-line-anchor"}),
    rule_paths: frozenset({"missing-path"}),
}
