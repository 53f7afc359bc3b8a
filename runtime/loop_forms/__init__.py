"""Loops: ``for_stmt`` and ``while_stmt``, the plan that picks each loop's form,
and the forms.

``loops`` holds the operators; ``loop_plan`` decides a loop's form from what
is known before it runs; the forms are the Python loop (``python_loops``), one
``lax.scan`` (``scan_loops``), a loop with a most-iterations count
(``bounded``) and the loop differentiable in reverse mode with no bound
(``checkpointed``).

Imports: every other part (the top layer, below ``autograph.runtime`` itself).
"""
