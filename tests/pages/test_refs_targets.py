"""Role targets: the defining public path or a package's re-export, never a module that only
imports the name; an ``except ImportError`` stand-in is shown as the name the code imports."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rlmap.pages.refs import Refs, public_paths
from tests.conftest import model_of

PACKAGE = {
    "pkg/__init__.py": "from pkg.value import Estimator\n",
    "pkg/_impl.py": '''
        try:
            from torch.compiler import mark_step
        except ImportError:

            def mark_step():
                """Placeholder."""
                raise NotImplementedError
        ''',
    "pkg/value.py": "class Estimator:\n    def set_keys(self):\n        '''Rename keys.'''\n",
    "pkg/loss.py": "from pkg.value import Estimator\nfrom pkg._impl import mark_step\n\ndef run():\n    mark_step()\n",
}


def test_a_module_importing_a_name_is_no_public_path_of_it(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    model = model_of(make_package(PACKAGE), "pkg")
    paths = public_paths(model)
    assert paths["pkg.value.Estimator"] == ["pkg.Estimator", "pkg.value.Estimator"]
    assert paths["pkg.value.Estimator.set_keys"] == ["pkg.Estimator.set_keys", "pkg.value.Estimator.set_keys"]
    assert "pkg._impl.mark_step" not in paths  # pkg.loss.mark_step is a use, not an export


def test_an_import_error_stand_in_is_shown_as_the_imported_name(
    make_package: Callable[[dict[str, str | bytes]], Path],
) -> None:
    root = make_package(PACKAGE)
    model = model_of(root, "pkg")
    ref = Refs(model, root).ref("pkg._impl.mark_step")
    assert (ref.display, ref.role, ref.anchor) == ("torch.compiler.mark_step", "", None)
    assert Refs(model, root).ref("pkg.value.Estimator").role == "class"
