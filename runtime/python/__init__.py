"""Python's built-ins, strings and iterables on traced values.

``builtins`` (``len``, ``min``, ``int``, ``isinstance``, ...),
``math_functions`` (Python's ``math``), ``strings`` (f-strings, ``str``,
``%``-formatting), ``iterables`` (``range``, ``zip``, ``enumerate`` and what a
loop iterates), ``items`` (item assignment), ``patterns`` (``match``) and
``side_effects`` (``print`` and ``assert``).

Imports: ``core``, ``functions`` and ``carried``.
"""
