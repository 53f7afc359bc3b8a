"""Staged branches: ``if`` statements and expressions, and ``and``/``or``/``not``.

Imports: ``core``, ``functions``, ``carried`` and ``python``.
"""
