"""AutoGraph for JAX: write Python control flow on arrays, get `lax`.

    >>> import autograph
    >>> f = autograph.convert(lambda x: x if x > 0 else -x)

Public API: :func:`convert`, :func:`to_code`, :func:`do_not_convert`,
:func:`set_loop_options`, and the error classes in :mod:`autograph.errors`.
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from autograph import runtime as _runtime  # noqa: F401 - what generated code calls (`ag__`)
from autograph.api import convert, do_not_convert, to_code
from autograph.directives import set_loop_options
from autograph.errors import (
    AutographError,
    BranchError,
    BuiltinError,
    ConditionError,
    ConversionError,
    LoopOptionsError,
    LoopStateError,
    SourceUnavailableError,
    UndefinedVariableError,
)
from autograph.export import ArtifactError, export, load, save
from autograph.function import ConcreteFunction, Function, function
from autograph.modes import functions_run_eagerly, run_eagerly, run_functions_eagerly
from autograph.runtime.python.side_effects import autograph_print as print  # noqa: A001
from autograph.specs import TensorSpec

try:  # one version number: the distribution's (pyproject.toml)
    __version__ = _version("autograph-jax")
except _PackageNotFoundError:  # pragma: no cover - running from a source tree not installed
    __version__ = "0+unknown"

__all__ = [
    "convert", "to_code", "do_not_convert", "set_loop_options", "function", "Function",
    "ConcreteFunction", "TensorSpec", "run_functions_eagerly", "functions_run_eagerly",
    "run_eagerly", "print", "export", "save", "load", "ArtifactError", "AutographError",
    "ConversionError", "ConditionError", "BranchError", "BuiltinError", "LoopStateError",
    "LoopOptionsError", "SourceUnavailableError", "UndefinedVariableError",
]


def __dir__() -> list[str]:
    """The public API (the submodules stay importable: ``autograph.errors``, ...)."""
    return sorted([*__all__, "__version__"])
