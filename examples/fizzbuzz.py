"""FizzBuzz, the classic AutoGraph demonstration: ``if``/``elif`` and ``print`` in a loop.

With a traced ``n`` the ``for i in range(1, n + 1)`` becomes a
``lax.while_loop``, the ``if``/``elif`` chain nested ``lax.cond``s, and each
converted ``print`` prints when the compiled program runs, in order, through
``jax.debug.print`` -- once per iteration, like the plain-Python run.

Run: ``python examples/fizzbuzz.py [N]``. Prints the converted code, then
FizzBuzz up to N in plain Python and compiled with ``autograph.function``,
called twice with different N (traced once).
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp

import autograph


def fizzbuzz(n):
    count = 0
    for i in range(1, n + 1):
        if i % 15 == 0:
            print("FizzBuzz")
        elif i % 3 == 0:
            print("Fizz")
        elif i % 5 == 0:
            print("Buzz")
        else:
            print(i)
        count += 1
    return count


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("``", "`"))
    parser.add_argument("n", type=int, nargs="?", default=15, help="count from 1 to N")
    args = parser.parse_args(argv)

    print(autograph.to_code(fizzbuzz))
    print(f"-- plain Python, n = {args.n}")
    fizzbuzz(args.n)
    compiled = autograph.function(fizzbuzz)
    for n in (args.n, args.n + 1):
        print(f"-- autograph.function, n = jnp.int32({n})")
        count = compiled(jnp.int32(n))
        jax.effects_barrier()  # the prints of this call are out before the next header
        print(f"   count = {int(count)}")
    print(f"traced {compiled.experimental_get_tracing_count()}x")


if __name__ == "__main__":
    main()
