"""``rlmap generate``: render every page in memory, then write atomically or check.

Nothing is written until every page has rendered, so an error (a vanished symbol, a broken
template) leaves the previous files untouched; the set is then swapped in whole
(:mod:`rlmap.output.write`), so a kill leaves the old pages or the new ones, never a mix.
``--check`` writes nothing and reports a unified diff of what would change.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess  # graphviz raises subprocess.CalledProcessError subclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from rlmap.errors import ExitCode, RlmapError
from rlmap.index.cache import Cache, DamagedEntry
from rlmap.index.source import SourceTree
from rlmap.model.codemodel import CodeModel
from rlmap.output.write import write_set
from rlmap.pages.compose import build_pages
from rlmap.pages.diagrams import Diagram
from rlmap.pages.docstree import DocsTree
from rlmap.pages.profile import Profile
from rlmap.pages.refs import Refs
from rlmap.pages.sections.curated import listed_pages, term_targets
from rlmap.render.renderer import ProseTemplates, Renderer, make_environment


class GenerateError(RlmapError):
    pass


@dataclass(slots=True)
class Output:
    """Every generated file: repo-relative path under the output directory -> bytes."""

    files: dict[str, bytes] = field(default_factory=dict)
    diagrams: list[tuple[str, Diagram]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Job:
    """What to render: the model of a source tree, the profile, the formats, and an optional
    directory of template overrides."""

    model: CodeModel
    source: SourceTree
    profile: Profile
    formats: tuple[str, ...]
    templates: Path | None = None
    docs: DocsTree | None = None  # the docs tree the pages link into (roles, glossary terms)
    cache: Cache | None = None  # where what the pages read of the code is kept (see rlmap.pages.flows)


# (phase, done, total) as the pages are made: "build" counts sections, "render" pages in each format
Tick = Callable[[str, int, int], None]


def build_output(job: Job, tick: Tick | None = None) -> Output:
    model, source, profile = job.model, job.source, job.profile
    refs = Refs(model, source, job.docs, job.cache)
    pages = build_pages(model, refs, profile, (lambda done, total: tick("build", done, total)) if tick else None)
    rendered, renders = 0, len(pages) * len(job.formats)
    environment = make_environment(job.templates, profile.templates)
    listed = listed_pages(profile)
    output = Output()
    stamp = source.stamp()
    compiled = ProseTemplates()  # each curated text compiled once, for every format
    for fmt in job.formats:
        # rst links a term the docs tree defines to its entry there; Markdown to rlmap's own heading
        terms = term_targets(profile, job.docs if fmt == "rst" else None)
        renderer = Renderer(environment, refs, fmt, stamp, terms, compiled)
        for built in pages:
            if tick is not None:
                tick("render", rendered, renders)
            rendered += 1
            page = built.page
            context = {
                "title": page.title,
                "label": f"rlmap_{page.slug}",
                "sections": built.sections,
                "leads": [renderer.prose(section.declared.lead) for section in built.sections],
                "see_also": [link for link in listed if link.slug != page.slug] if page.see_also else [],
            }
            shown = {section.prose for section in built.sections if section.prose}
            prose = profile.prose.get(page.name, {})
            text = renderer.page(page.template, context, prose, page.slug, page.titles(), shown)
            data = text.encode("utf-8")
            if len(data) > MAX_PAGE_BYTES:  # whatever built it: a loop, a join, a width
                raise GenerateError(
                    f"page {fmt}/{page.slug}.{fmt} renders to {len(data) >> 20} MiB, over the "
                    f"{MAX_PAGE_BYTES >> 20} MiB a page may take",
                    "a template or prose entry builds huge values; fix it",
                )
            output.files[f"{fmt}/{page.slug}.{fmt}"] = data
            for diagram in built.diagrams:
                name = f"{fmt}/{diagram.name}.dot"
                if name in output.files:  # (two sections drew it: the second would replace the first)
                    raise GenerateError(
                        f"two diagrams are named '{diagram.name}' (one on page {page.slug})",
                        "give each section its own diagram name (a '{class}' name: one class name in two modules)",
                    )
                output.files[name] = diagram.dot.encode("utf-8")
                output.diagrams.append((fmt, diagram))
    if tick is not None:
        tick("render", rendered, renders)
    return output


def write_output(out: Path, output: Output, artefacts: dict[str, bytes] | None = None) -> list[str]:
    """Replace the page set in ``out`` all at once (see :mod:`rlmap.output.write`). Returns what changed."""
    done = write_set(out, output.files, artefacts)
    return [*done.changed, *done.removed]


def find_dot() -> str:
    """The ``dot`` program's path; a clear error when graphviz is not installed."""
    dot = shutil.which("dot")
    if dot is None:
        raise GenerateError(
            "--render-svg needs the 'dot' program, which is not installed",
            "install graphviz (Debian: apt-get install -y graphviz) or leave out --render-svg; "
            "the .dot files and the pages do not need it",
        )
    return dot


DOT_SECONDS = 60  # one diagram's layout (TorchRL's largest takes well under a second)


def svg_names(output: Output) -> list[str]:
    """The SVG file of each diagram, as :func:`render_svgs` names it: ``fmt/name.svg``."""
    return [f"{fmt}/{diagram.name}.svg" for fmt, diagram in output.diagrams]


def render_svgs(output: Output, dot: str) -> dict[str, bytes]:
    """Lay out each diagram with graphviz's ``dot`` (the program :func:`find_dot` found):
    ``fmt/name.svg`` -> SVG bytes, written with the pages (listed in the manifest as artefacts,
    not compared by ``--check``).  Each layout has a time limit: a ``dot`` that hangs is an
    error, not a hang."""
    svgs: dict[str, bytes] = {}
    for fmt, diagram in output.diagrams:
        try:
            done = subprocess.run(
                [dot, "-Kdot", "-Tsvg"],
                input=diagram.dot.encode("utf-8"),
                capture_output=True,
                timeout=DOT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise GenerateError(
                f"dot took more than {DOT_SECONDS} s to lay out {diagram.name}.dot",
                "check the graphviz installation (dot -V), or leave out --render-svg",
            ) from None
        except OSError as error:
            raise GenerateError(
                f"cannot run dot: {error.strerror or error}", "check the graphviz installation"
            ) from None
        if done.returncode != 0 or not done.stdout:
            said = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
            reason = said[-1] if said else f"exit status {done.returncode}"
            raise GenerateError(
                f"dot failed on {diagram.name}.dot: {reason}",
                "report this with the .dot file, or leave out --render-svg",
            )
        svgs[f"{fmt}/{diagram.name}.svg"] = done.stdout  # (as svg_names names it)
    return svgs


# The largest page a profile may render: TorchRL's largest is ~100 KB.  Templates are bounded
# piece by piece (repeats, widths, ranges), but a page can still grow by joining or looping:
# this bounds what reaches the output directory whatever built it.
MAX_PAGE_BYTES = 8 << 20

# Bounds on rendering, which runs hostile templates and prose: the jinja sandbox keeps them from
# Python's internals, these keep them from the machine's time and memory.
RENDER_CPU_SECONDS = 60  # TorchRL's pages take ~3 s
RENDER_MEMORY_BYTES = 2 << 30


def _cpu_limit() -> int:
    """The render CPU limit; ``RLMAP_RENDER_CPU_SECONDS`` lowers it (the tests use 3 s)."""
    try:
        return max(1, min(RENDER_CPU_SECONDS, int(os.environ.get("RLMAP_RENDER_CPU_SECONDS", RENDER_CPU_SECONDS))))
    except ValueError:
        return RENDER_CPU_SECONDS


def build_output_isolated(job: Job, tick: Tick | None = None) -> Output:
    """:func:`build_output` in a forked child with a CPU-time and a memory limit (:func:`_bounded`).

    A template that loops over a million-character string a million times, or builds a
    gigabyte string through a filter, stops the child, not rlmap: the result is a clear error.
    The child hands back plain data (MessagePack), never pickles; ``tick`` is told its progress,
    which it writes on a second pipe as it goes.  Where ``fork`` does not exist the pages are
    built in this process.
    """
    if not hasattr(os, "fork"):
        return build_output(job, tick)

    def pages(telling: int) -> dict[str, Any]:
        def told(phase: str, done: int, total: int) -> None:
            with contextlib.suppress(OSError):  # the parent stopped reading: the pages are still made
                os.write(telling, f"{phase} {done} {total}\n".encode("ascii"))  # (a line: one write, whole)

        output = build_output(job, told if telling != -1 else None)
        diagrams = [(fmt, diagram.name, diagram.dot, diagram.mermaid) for fmt, diagram in output.diagrams]
        return {"files": output.files, "diagrams": diagrams}

    result = _bounded(pages, "the pages", tick)
    output = Output(files=dict(result["files"]))
    output.diagrams = [(fmt, Diagram(name, dot, mermaid)) for fmt, name, dot, mermaid in result["diagrams"]]
    return output


def render_bounded(render: Callable[[], str]) -> str:
    """``render()`` (the text of one section, for the Sphinx extension's directives) in a forked
    child under the limits of :func:`build_output_isolated`: a profile's template that loops for
    ever stops a ``sphinx-build`` with an error, not a hang.  An :class:`RlmapError` it raises is
    raised here; where ``fork`` does not exist it runs in this process."""
    if not hasattr(os, "fork"):
        return render()
    return str(_bounded(lambda _: {"text": render()}, "the section")["text"])


def _bounded(compute: Callable[[int], dict[str, Any]], what: str, tick: Tick | None = None) -> dict[str, Any]:
    """``compute`` run in a forked child with a CPU-time and a memory limit, given the pipe it may
    write its progress lines to (-1 without ``tick``), which ``tick`` is told as they come; the
    plain data it returns, sent back as MessagePack.  An error it met is raised here: rlmap's own
    as it was, a bug as :class:`RuntimeError`, a limit reached as a :class:`GenerateError`
    saying so (``what``: what was being rendered)."""
    reader, writer = os.pipe()
    told, telling = os.pipe() if tick is not None else (-1, -1)
    pid = os.fork()
    if pid == 0:  # the child: compute, send the result, never return into the caller's code
        os.close(reader)
        status = 0
        try:
            if told != -1:
                os.close(told)
            payload = _in_child(compute, telling, what)
            with os.fdopen(writer, "wb") as stream:
                stream.write(msgspec.msgpack.encode(payload))
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(writer)
    if telling != -1:
        os.close(telling)
    data = _read_all(reader, time.monotonic() + _cpu_limit() * 2 + 5, told, tick)
    if data is None:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    try:
        result = msgspec.msgpack.decode(data) if data else None
    except msgspec.DecodeError:  # killed while writing
        result = None
    if not isinstance(result, dict) or ("value" not in result and "error" not in result):
        raise GenerateError(
            f"rendering {what} stopped: it took over {_cpu_limit()} s of CPU or "
            f"{RENDER_MEMORY_BYTES >> 30} GiB of memory (exit status {status})",
            _HUGE_HINT,
        )
    if "error" in result:
        kind, message, hint, code = result["error"]
        if kind == "internal":
            raise RuntimeError(message)  # a bug in rlmap: reported as one, with exit 70
        if kind == "damaged":  # a cached section the pages read: the cache's fault, as in this process
            raise DamagedEntry(Path(message), hint)
        error = GenerateError(message, hint)
        error.exit_code = ExitCode(code)
        raise error
    value: dict[str, Any] = result["value"]
    return value


def _in_child(compute: Callable[[int], dict[str, Any]], telling: int, what: str) -> dict[str, Any]:
    """What :func:`_bounded`'s child sends back: ``compute``'s result, or the error that stopped it."""
    try:
        _limit_resources()
        return {"value": compute(telling)}
    except DamagedEntry as error:  # removed by the child: the parent runs the command again
        return {"error": ["damaged", str(error.path), error.section, int(error.exit_code)]}
    except RlmapError as error:
        return {"error": ["user", error.message, error.hint, int(error.exit_code)]}
    except MemoryError:
        return {"error": ["user", f"rendering {what} ran out of memory", _HUGE_HINT, int(ExitCode.USAGE)]}
    except RecursionError:
        return {"error": ["user", f"rendering {what} recursed too deeply", _HUGE_HINT, int(ExitCode.USAGE)]}
    except Exception as error:
        return {"error": ["internal", f"{type(error).__name__}: {error}", "", int(ExitCode.INTERNAL)]}


_HUGE_HINT = "a template or prose entry loops too long or builds huge values; fix it"


def _limit_resources() -> None:
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime) + _cpu_limit()
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            mapped = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return
    limit = mapped + RENDER_MEMORY_BYTES
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or limit < hard:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _read_all(descriptor: int, deadline: float, told: int = -1, tick: Tick | None = None) -> bytes | None:
    """Everything the child writes, or ``None`` when it is still writing at the deadline; what it
    tells of its progress on ``told`` meanwhile goes to ``tick``."""
    chunks: list[bytes] = []
    progress = _ProgressLines(tick) if told != -1 and tick is not None else None
    watched = [descriptor, told] if progress is not None else [descriptor]
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select(watched, [], [], remaining)
            if not ready:
                return None
            if progress is not None and told in ready:
                if not progress.feed(os.read(told, 1 << 16)):
                    watched.remove(told)  # (closed: the child is done or gone)
                continue
            chunk = os.read(descriptor, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(descriptor)
        if told != -1:
            os.close(told)


class _ProgressLines:
    """The lines ``phase done total`` the rendering child writes, handed to a tick as they come
    (a line cut between two reads is kept until its end arrives; one that does not read so is
    passed over)."""

    def __init__(self, tick: Tick) -> None:
        self._tick = tick
        self._rest = b""

    def feed(self, chunk: bytes) -> bool:
        """Take what was read; ``False`` at the end of the pipe."""
        if not chunk:
            return False
        *lines, self._rest = (self._rest + chunk).split(b"\n")
        for line in lines:
            parts = line.decode("ascii", "replace").split()
            if len(parts) == 3 and parts[0] in ("build", "render") and parts[1].isdigit() and parts[2].isdigit():
                self._tick(parts[0], int(parts[1]), int(parts[2]))
        return True
