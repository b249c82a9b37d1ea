"""Sessions: tests, lint, typecheck, bench, and the main job (generate)."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

# The CPU build of torch on these machines' disk; any other pin pulls multi-GB CUDA wheels.
TORCH = "torch==2.13.0"
TORCHRL = "torchrl==0.14.1"


@nox.session
def tests(session: nox.Session) -> None:
    """Run the whole test suite against the installed torchrl 0.14.1 (torch CPU build)."""
    session.install(TORCH)
    session.install("-e", ".[test,torchrl]")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff: lint and format check of rlmap and its tests."""
    session.install("ruff>=0.5")
    session.run("ruff", "check", "rlmap", "tests", "noxfile.py")
    session.run("ruff", "format", "--check", "rlmap", "tests", "noxfile.py")


@nox.session
def typecheck(session: nox.Session) -> None:
    """Mypy over the rlmap package."""
    session.install("-e", ".", "mypy>=1.10")
    session.run("mypy")


@nox.session
def bench(session: nox.Session) -> None:
    """Timings on the installed torchrl (cold, warm show and check, one file changed, resolve, audit,
    tensordict; torch itself with ``-- --torch``), in rounds of one sample each, every sample held
    against the ast and libcst parse floors measured beside it, and issue 15's targets."""
    session.install(TORCH)
    session.install("-e", ".[torchrl]")
    session.run("python", "-m", "rlmap.bench", *session.posargs)


@nox.session
def generate(session: nox.Session) -> None:
    """The main job: regenerate generated_docs/ from the installed torchrl 0.14.1."""
    session.install(TORCH)
    session.install("-e", ".[torchrl]")
    session.run("rlmap", "generate", *session.posargs)
