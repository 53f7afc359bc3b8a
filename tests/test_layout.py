"""The package's layout rules, checked on its source.

* No module imports another module's private name (``from .loops import
  _helper``): what a module shares, it names publicly.
* The short-circuit operators travel as ``logical.Op``, never as strings; the
  blocks the runtime stages as ``Construct``, whose member picks an error's
  class (no string compared with ```if``` does).
* ``runtime/`` is layered: each subpackage imports only from those below it
  (``core`` < ``functions`` < ``carried`` < ``python`` < ``branches`` <
  ``loop_forms``), and ``autograph.runtime`` itself (``ag__``) from any.
"""

from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("autograph", "runtime", "converters")
OWN = ("autograph", "runtime", "converters")


def _modules():
    for package in PACKAGES:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in sorted(files):
                if name.endswith(".py"):
                    yield os.path.relpath(os.path.join(folder, name), ROOT)


MODULES = sorted(_modules())


def _own(node: ast.ImportFrom) -> bool:
    return node.level > 0 or (node.module or "").split(".")[0] in OWN


@pytest.mark.parametrize("path", MODULES)
def test_no_private_name_is_imported_from_another_module(path):
    with open(os.path.join(ROOT, path)) as f:
        tree = ast.parse(f.read())
    private = [f"{node.module or '.'}.{alias.name} (line {node.lineno})"
               for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and _own(node)
               for alias in node.names
               if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert not private, f"{path} imports private names: {private}"


def test_the_check_sees_a_private_import():
    node = ast.parse("from .loops import _helper, public").body[0]
    assert _own(node) and [a.name for a in node.names if a.name.startswith("_")] == ["_helper"]


def test_logical_operators_are_an_enum():
    with open(os.path.join(ROOT, "runtime", "branches", "logical.py")) as f:
        text = f.read()
    assert "op: str" not in text and 'op == "and"' not in text
    from autograph.runtime.branches.logical import Op
    assert {o.value for o in Op} == {"and", "or", "not"}


def _string_comparisons(text: str) -> list[str]:
    """The comparisons in ``text`` of something with a string that names a block."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Compare):
            for part in [node.left, *node.comparators]:
                if (isinstance(part, ast.Constant) and isinstance(part.value, str)
                        and part.value.strip("`").split("` ")[0] in ("if", "while", "for")):
                    found.append(f"{ast.unparse(node)} (line {node.lineno})")
    return found


@pytest.mark.parametrize("path", [p for p in MODULES if p.startswith("runtime" + os.sep)])
def test_no_string_label_picks_a_construct_or_its_error(path):
    with open(os.path.join(ROOT, path)) as f:
        found = _string_comparisons(f.read())
    assert not found, f"{path} compares strings that name blocks: {found}"


def test_the_label_check_sees_a_string_comparison():
    text = 'cls = A if construct == "`if`" else B\nok = loop == "for"\nfine = x == "other"\n'
    assert len(_string_comparisons(text)) == 2
    from autograph.runtime.core.constructs import Construct
    assert Construct.IF.error.__name__ == "BranchError"
    assert {c.error.__name__ for c in Construct if c.is_loop} == {"LoopStateError"}


RUNTIME_LAYERS = ("core", "functions", "carried", "python", "branches", "loop_forms")


def _runtime_imports(path: str, text: str | None = None) -> list[tuple[str, int]]:
    """(subpackage, line) of each runtime subpackage the module at ``path`` (whose
    source is ``text``, or the file's) imports."""
    if text is None:
        with open(os.path.join(ROOT, path)) as f:
            text = f.read()
    tree = ast.parse(text)
    here = path.split(os.sep)[1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                targets = [here]
            elif node.level == 2:
                targets = [(node.module or "").split(".")[0]] if node.module else [
                    a.name for a in node.names]
            elif (node.module or "").startswith("autograph.runtime."):
                targets = [node.module.split(".")[2]]
            else:
                continue
            found += [(t, node.lineno) for t in targets]
        elif isinstance(node, ast.Import):
            found += [(a.name.split(".")[2], node.lineno) for a in node.names
                      if a.name.startswith("autograph.runtime.")]
    return found


RUNTIME_MODULES = [p for p in MODULES if p.startswith("runtime" + os.sep)
                   and p.count(os.sep) == 2]


def test_runtime_modules_all_lie_in_a_layer():
    assert {p.split(os.sep)[1] for p in RUNTIME_MODULES} == set(RUNTIME_LAYERS)
    flat = [p for p in MODULES if p.startswith("runtime" + os.sep) and p.count(os.sep) == 1]
    assert flat == [os.path.join("runtime", "__init__.py")]  # `ag__`, and nothing else


@pytest.mark.parametrize("path", RUNTIME_MODULES)
def test_runtime_layers_import_only_those_below(path):
    here = RUNTIME_LAYERS.index(path.split(os.sep)[1])
    upward = [f"{target} (line {line})" for target, line in _runtime_imports(path)
              if RUNTIME_LAYERS.index(target) > here]
    assert not upward, f"{path} imports from a layer above its own: {upward}"


def test_the_layer_check_sees_an_upward_import():
    text = ("from ..loop_forms import loops\nfrom ..core.values import is_traced\n"
            "from . import state\nfrom autograph.runtime.python.builtins import len_\n")
    found = _runtime_imports(os.path.join("runtime", "carried", "probe.py"), text)
    assert found == [("loop_forms", 1), ("core", 2), ("carried", 3), ("python", 4)]
