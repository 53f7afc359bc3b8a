"""What a staged block carries and watches.

The state a branch or loop carries (``state``, ``carry``), the lists and dicts
it changes in place (``in_place``), the objects and attributes it reads and
writes (``objects``, ``attributes``), and what it changes outside itself
(``outside``).

Imports: ``core`` and ``functions``.
"""
