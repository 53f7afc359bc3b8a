"""Every code block of README.md and docs/ runs, and every converted listing is
what ``to_code`` prints today, so the documentation cannot drift from the code.

A block may be preceded by an HTML comment the reader does not see:

* ``<!-- doc-test setup: ... -->``: code run before the block (imports, the
  model and data a fragment uses);
* ``<!-- doc-test check: ... -->`` after a block: code run after it, that
  checks what the block claims;
* ``<!-- doc-test skip: why -->``: the block is not run (a shell session
  that installs, a command for a cluster), with the reason.

Python blocks holding ``ag__.`` are converted listings: the function they
show (``LISTED`` says where it lives) must convert to exactly that text.
Text blocks of an ``$ autograph ...`` session run the command and compare.
"""

import os
import re
import runpy
import subprocess
import sys
from dataclasses import dataclass

import pytest

import autograph

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(
    ROOT, "docs")) if f.endswith(".md"))


@dataclass
class Block:
    doc: str
    line: int
    lang: str
    text: str
    setup: str = ""
    check: str = ""
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


_COMMENT = re.compile(r"<!-- doc-test (setup|check|skip):(.*?)-->", re.S)


def _blocks(doc: str) -> list[Block]:
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        text = f.read()
    lines = text.splitlines()
    out: list[Block] = []
    pending: dict = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("<!-- doc-test"):
            j = i
            while "-->" not in lines[j]:
                j += 1
            m = _COMMENT.match("\n".join(lines[i:j + 1]))
            assert m, f"{doc}:{i + 1}: a doc-test comment it cannot read"
            kind, body = m.group(1), m.group(2).strip("\n")
            if kind == "check":
                assert out, f"{doc}:{i + 1}: a check before any block"
                out[-1].check = body
            else:
                pending[kind] = body
            i = j + 1
            continue
        if line.startswith("```") and line.strip() != "```":
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            out.append(Block(doc, i + 1, line[3:].strip(), "\n".join(lines[i + 1:j]) + "\n",
                             setup=pending.get("setup", ""),
                             skip=pending["skip"].strip() if "skip" in pending else None))
            pending = {}
            i = j + 1
            continue
        if line.strip() and not line.startswith("<!--"):
            pending.pop("setup", None)  # a comment belongs to the block right after it
            pending.pop("skip", None)
        i += 1
    return out


ALL = [b for doc in DOCS for b in _blocks(doc)]
PYTHON = [b for b in ALL if b.lang == "python" and "ag__." not in b.text]
LISTINGS = [b for b in ALL if b.lang == "python" and "ag__." in b.text]
SESSIONS = [b for b in ALL if b.lang == "text" and b.text.startswith("$ autograph ")]


def _example(name: str) -> dict:
    return runpy.run_path(os.path.join(ROOT, "examples", f"{name}.py"), run_name="example")


def _readme_namespace() -> dict:
    first = next(b for b in PYTHON if b.doc == "README.md")
    return _run(first, "readme_first")


def _train_epoch():
    import optax
    return _example("training_loop")["make_train_epoch"](optax.adam(1e-3)).python_function


# where each function a converted listing shows is defined
LISTED = {
    "clipped_sum": lambda: _readme_namespace()["clipped_sum"],
    "newton": lambda: _example("newton")["newton"],
    "train_epoch": _train_epoch,
    "collatz_steps": lambda: _example("collatz")["collatz_steps"],
}


_RAN: dict = {}


def _run(block: Block, name: str) -> dict:
    """Runs ``block`` (with its setup and check) as a module of its own, from a file,
    so that ``autograph`` can read its source."""
    if block.id in _RAN:
        return _RAN[block.id]
    import tempfile
    folder = tempfile.mkdtemp(prefix="doc-test-")
    path = os.path.join(folder, f"{name}.py")
    source = "\n".join(part for part in (block.setup, block.text, block.check) if part)
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    argv = sys.argv
    sys.argv = [path]
    try:
        namespace = runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv = argv
    _RAN[block.id] = namespace
    return namespace


@pytest.mark.parametrize("block", PYTHON, ids=lambda b: b.id)
def test_every_python_block_runs(block):
    if block.skip is not None:
        pytest.skip(block.skip)  # (says why, in the document)
    _run(block, re.sub(r"\W", "_", block.id))


@pytest.mark.parametrize("block", LISTINGS, ids=lambda b: b.id)
def test_every_converted_listing_is_what_to_code_prints(block):
    name = re.match(r"def (\w+)", block.text).group(1)
    assert name in LISTED, f"{block.id}: say in LISTED where `{name}` is defined"
    assert autograph.to_code(LISTED[name]()).strip() == block.text.strip()


@pytest.mark.parametrize("block", SESSIONS, ids=lambda b: b.id)
def test_every_command_line_session_prints_what_it_shows(block, tmp_path):
    import inspect
    source = inspect.getsource(_example("collatz")["collatz_steps"])
    (tmp_path / "model.py").write_text(source)
    command, *shown = block.text.rstrip("\n").split("\n")
    args = command.split()[2:]  # after "$ autograph"
    done = subprocess.run([sys.executable, "-m", "autograph", *args], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "COLUMNS": "100"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n").split("\n") == shown


def test_the_blocks_are_found():
    assert len(PYTHON) >= 5 and len(LISTINGS) >= 3 and len(SESSIONS) >= 2


def test_the_reference_lists_every_pass_in_order():
    from autograph import pipeline
    names = []
    for step in pipeline.PASSES:
        for converter in getattr(step, "converters", None) or (step,):
            names.append(converter.__name__.rsplit(".", 1)[1])
    with open(os.path.join(ROOT, "docs", "reference.md"), encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("## The pipeline"):text.index("## Which variables")]
    listed = re.findall(r"(?:^|\s)\d+\. `(\w+)`", section)
    assert listed == names
