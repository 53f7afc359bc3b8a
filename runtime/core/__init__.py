"""Values and checks every other part of the runtime uses.

Whether a value is a Python value or a traced one (``values``), the order of
dict keys through ``lax`` (``key_order``), callbacks to the host
(``host_callbacks``), checks and errors raised when the program runs
(``run_time_errors``), the truth of a test (``conditions``), tracing into
jaxprs (``jaxprs``) and the interval arithmetic that bounds Python ints
(``intervals``).

Imports: nothing else of the runtime (the bottom layer).
"""
