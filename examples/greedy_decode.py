"""Greedy sequence generation that stops early at an end token.

A tiny bigram language model (next-word scores counted from a few
sentences) generates text one token at a time, always taking the most likely
next token, until it emits the end token ``.`` (``break``) or reaches
``max_len``. Converted, the ``while`` becomes a ``lax.while_loop`` that stops
at run time; the output buffer has the static shape ``[max_len]``. Under
``jax.vmap`` several prompts decode at once, each to its own length.

Run: ``python examples/greedy_decode.py``. Prints the converted code, then
decodes in plain Python, under ``jax.jit`` and under ``jax.vmap``.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

import autograph

CORPUS = """
the cat sat on the mat .
the dog sat on the rug .
a dog chased the cat .
the cat chased a mouse .
a bird sang in the tree .
my dog ate my homework .
the mouse ran up the clock .
time flies like an arrow .
"""
END = "."


def build_model(corpus: str = CORPUS):
    """The vocabulary and a [V, V] table of next-token log-probabilities."""
    words = corpus.split()
    vocab = sorted(set(words))
    index = {w: i for i, w in enumerate(vocab)}
    counts = np.full((len(vocab), len(vocab)), 0.01)
    for a, b in zip(words, words[1:]):
        if a != END:
            counts[index[a], index[b]] += 1.0
    logits = np.log(counts / counts.sum(axis=1, keepdims=True)).astype(np.float32)
    return vocab, jnp.asarray(logits)


def greedy_decode(logits, token, end_token, max_len):
    """Tokens after ``token``, padded with ``end_token`` to ``max_len``, and their count."""
    out = jnp.full(max_len, end_token, dtype=jnp.int32)
    length = 0
    while length < max_len:
        token = jnp.argmax(logits[token]).astype(jnp.int32)
        out = out.at[length].set(token)
        length += 1
        if token == end_token:
            break
    return out, length


def words(vocab, prompt, tokens, length) -> str:
    return " ".join([prompt] + [vocab[int(t)] for t in np.asarray(tokens)[:int(length)]])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("``", "`"))
    parser.add_argument("--max-len", type=int, default=12,
                        help="the most tokens decoded per prompt")
    parser.add_argument("prompts", nargs="*", default=["the", "a", "my", "time", "cat"],
                        help="first words to decode from")
    args = parser.parse_args(argv)

    print(autograph.to_code(greedy_decode))
    vocab, logits = build_model()
    end = vocab.index(END)
    starts = jnp.array([vocab.index(p) for p in args.prompts], dtype=jnp.int32)

    decode = jax.jit(autograph.convert(greedy_decode), static_argnums=3)
    batched = jax.jit(jax.vmap(autograph.convert(greedy_decode), in_axes=(None, 0, None, None)),
                      static_argnums=3)
    v_tokens, v_lengths = batched(logits, starts, end, args.max_len)
    results = []
    for i, prompt in enumerate(args.prompts):
        py_tokens, py_length = greedy_decode(np.asarray(logits), vocab.index(prompt), end,
                                             args.max_len)
        j_tokens, j_length = decode(logits, starts[i], end, args.max_len)
        assert int(j_length) == py_length == int(v_lengths[i])
        assert (np.asarray(j_tokens) == np.asarray(py_tokens)).all()
        assert (np.asarray(v_tokens[i]) == np.asarray(py_tokens)).all()
        text = words(vocab, prompt, j_tokens, j_length)
        stopped = "end token" if vocab[int(j_tokens[int(j_length) - 1])] == END else "max_len"
        print(f"{prompt!r:8} -> {text!r} ({int(j_length)} tokens, stopped at {stopped})")
        results.append(text)
    print("plain Python, jax.jit and jax.vmap agree")
    return results


if __name__ == "__main__":
    main()
