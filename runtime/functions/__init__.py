"""Calling functions from converted code.

``calls`` converts a user function on its first call (``converted_call``)
and hands converted twins to libraries; ``libraries`` rebuilds library
wrappers (Flax linen methods, Equinox's filtered transformations) around
converted functions; ``transforms`` converts the functions handed to JAX's
transformations; ``index_meaning`` tells when a loop index is used as a
Python value.

Imports: ``core``.
"""
