"""Exporting converted functions: ``export``, ``save`` and ``load``.

``save`` writes one file, a zip archive holding:

* ``manifest.json``: the format version, the input signature (shapes with
  ``null`` for symbolic dimensions, dtypes), the output shapes, a hash of the
  function's source, and the versions of autograph and JAX that wrote it;
* ``module.bin``: the function serialized by ``jax.export`` (StableHLO plus
  calling conventions).

``load`` needs neither the source nor the module that defined the function:
only JAX. A ``None`` in a spec is a symbolic dimension, so one artifact
serves every size.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import zipfile
from typing import Any, Callable, Sequence

import jax
import numpy as np

from autograph import api
from autograph.callables import is_function, unwrap
from autograph.specs import TensorSpec

FORMAT = "autograph-jax.exported"
FORMAT_VERSION = 1
_MANIFEST, _MODULE = "manifest.json", "module.bin"


class ArtifactError(ValueError):
    """A saved artifact is missing, corrupt, truncated or from a newer version."""


def _specs(specs: Sequence[Any]) -> tuple:
    out = []
    for s in specs:
        if isinstance(s, TensorSpec):
            out.append(s)
        elif isinstance(s, jax.ShapeDtypeStruct) or hasattr(s, "dtype"):
            out.append(TensorSpec(np.shape(s), s.dtype))
        else:
            raise TypeError(f"export needs a TensorSpec, jax.ShapeDtypeStruct or array per "
                            f"argument; got {s!r}")
    return tuple(out)


def _jitted(f: Callable):
    if is_function(f):
        return f._jit
    target = api.convert(f)  # as it is when converted already
    return jax.jit(target)


def export(f: Callable, *specs) -> jax.export.Exported:
    """Exports ``f`` (converted first if it is a plain function) for ``specs``.

    Args:
      f: a function, a converted function or an ``autograph.function``.
      *specs: one :class:`TensorSpec` (``None`` for a symbolic dimension),
        ``jax.ShapeDtypeStruct`` or example array per argument; none for an
        ``autograph.function`` with an ``input_signature``, which is used.

    Returns:
      A ``jax.export.Exported``.
    """
    specs = _specs(_given_or_declared(f, specs))
    return jax.export.export(_jitted(f))(*specs)


def _given_or_declared(f: Callable, specs: Sequence[Any]) -> Sequence[Any]:
    """``specs``, or where none are given, the ``input_signature`` of an
    ``autograph.function`` (as TensorFlow saves a ``tf.function`` with its own)."""
    if not specs and is_function(f) and f.input_signature is not None:
        return tuple(f.input_signature)
    return specs


def _source_hash(f: Callable) -> str | None:
    try:
        plain, _ = unwrap(getattr(f, "python_function", f))
        return hashlib.sha256(inspect.getsource(plain).encode()).hexdigest()
    except (OSError, TypeError):
        return None


def save(path: str | os.PathLike, f: Callable, *specs) -> None:
    """Writes ``f``, exported for ``specs``, to the artifact file ``path``.

    Examples:
      >>> import os, tempfile, jax.numpy as jnp, autograph
      >>> def double_pos(x):
      ...     if x.sum() > 0:
      ...         x = x * 2
      ...     return x
      >>> path = os.path.join(tempfile.mkdtemp(), "f.agx")
      >>> autograph.save(path, double_pos, autograph.TensorSpec([None], jnp.float32))
      >>> autograph.load(path)(jnp.ones(3))
      Array([2., 2., 2.], dtype=float32)
    """
    specs = _specs(_given_or_declared(f, specs))
    exported = export(f, *specs)
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "inputs": [{"shape": list(s.declared_shape), "dtype": s.dtype.name} for s in specs],
        "outputs": [{"shape": [d if isinstance(d, int) else None for d in a.shape],
                     "dtype": np.dtype(a.dtype).name} for a in exported.out_avals],
        "name": getattr(f, "__qualname__", getattr(f, "__name__", "function")),
        "source_sha256": _source_hash(f),
        "jax_version": jax.__version__,
        "autograph_version": _version(),
    }
    try:  # with its derivative, so that `jax.grad` goes through the loaded function
        module = bytes(exported.serialize(vjp_order=1))
        manifest["vjp_order"] = 1
    except Exception:  # noqa: BLE001 - a function JAX cannot differentiate: without
        module = bytes(exported.serialize())
        manifest["vjp_order"] = 0
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr(_MANIFEST, json.dumps(manifest, indent=2))
        z.writestr(_MODULE, module)


def _version() -> str:
    import autograph
    return autograph.__version__


class LoadedFunction:
    """A function read back by :func:`load`; calls check the saved signature."""

    def __init__(self, manifest: dict, exported, path: str):
        self.manifest = manifest
        self._exported = exported
        self._path = path
        self.input_signature = tuple(TensorSpec(i["shape"], i["dtype"]) for i in manifest["inputs"])
        self._call = jax.jit(exported.call)

    def __call__(self, *args):
        if len(args) != len(self.input_signature):
            raise TypeError(f"{self.manifest['name']} (loaded from {self._path}) takes "
                            f"{len(self.input_signature)} arguments {list(self.input_signature)}; "
                            f"got {len(args)}")
        for i, (spec, value) in enumerate(zip(self.input_signature, args)):
            value = np.asarray(value) if not hasattr(value, "dtype") else value
            why = spec.mismatch(value)
            if why is not None:  # a wrong dtype is a TypeError, a wrong shape a ValueError
                error = TypeError if np.dtype(value.dtype) != spec.dtype else ValueError
                raise error(f"argument #{i} of {self.manifest['name']} (loaded from "
                            f"{self._path}) does not match the saved signature: expected "
                            f"{spec!r}, got {why}")
        return self._call(*args)

    def __repr__(self) -> str:
        return f"<autograph.LoadedFunction {self.manifest['name']}{list(self.input_signature)}>"


def load(path: str | os.PathLike) -> LoadedFunction:
    """Reads an artifact written by :func:`save`; returns a callable.

    Raises:
      ArtifactError: the file is missing, not an artifact, corrupt or
        truncated, or written by a newer format version.
    """
    path = os.fspath(path)
    try:
        with zipfile.ZipFile(path) as z:
            manifest = json.loads(z.read(_MANIFEST))
            payload = z.read(_MODULE)
    except FileNotFoundError:
        raise ArtifactError(f"{path}: no such artifact file") from None
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, EOFError, OSError) as e:
        raise ArtifactError(f"{path}: not a readable autograph artifact (corrupt or "
                            f"truncated?): {e}") from None
    if manifest.get("format") != FORMAT:
        raise ArtifactError(
            f"{path}: not an autograph artifact (format {manifest.get('format')!r})")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ArtifactError(
            f"{path}: written with artifact format version {version}, newer than this "
            f"autograph reads ({FORMAT_VERSION}); upgrade autograph-jax to load it")
    try:
        exported = jax.export.deserialize(bytearray(payload))
    except Exception as e:  # jax raises several types for bad bytes
        raise ArtifactError(f"{path}: the serialized module is corrupt: "
                            f"{type(e).__name__}: {e}") from None
    return LoadedFunction(manifest, exported, path)
