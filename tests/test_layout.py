"""The package's layout rules, checked on its source.

* No module imports another module's private name (``from .loops import
  _helper``): what a module shares, it names publicly.
* The short-circuit operators travel as ``logical.Op``, never as strings.
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
    with open(os.path.join(ROOT, "runtime", "logical.py")) as f:
        text = f.read()
    assert "op: str" not in text and 'op == "and"' not in text
    from autograph.runtime.logical import Op
    assert {o.value for o in Op} == {"and", "or", "not"}
