"""The Collatz sequence: a `while` loop whose trip count depends on the data.

Run: ``python examples/collatz.py``. Prints the converted code, then runs it
eagerly, under ``jax.jit``, and under ``jax.vmap`` over several starts.
"""

import jax
import jax.numpy as jnp

import autograph


def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def main():
    print(autograph.to_code(collatz_steps))
    fast = jax.jit(autograph.convert(collatz_steps))
    starts = jnp.array([1, 6, 7, 27, 97], dtype=jnp.int32)
    print("plain Python:", [collatz_steps(int(n)) for n in starts])
    print("jax.jit:     ", [int(fast(n)) for n in starts])
    print("jax.vmap:    ", jax.vmap(autograph.convert(collatz_steps))(starts).tolist())


if __name__ == "__main__":
    main()
