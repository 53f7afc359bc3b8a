# Set-up and everyday commands. `make install && make demo` on a fresh machine,
# `make test` for the lint gate and the whole suite (it installs first when needed).

PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
	&& echo $$p && break; done)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test bench fuzz clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || (echo "error: Python 3.11 or newer is required" >&2; exit 2)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,examples]'
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/collatz.py

# the lint gate (ruff, configured in pyproject.toml), then the whole suite
test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) benchmarks/run.py

# The long differential fuzzing run (CI runs a small budget inside `make test`).
fuzz: $(STAMP)
	AUTOGRAPH_FUZZ_EXAMPLES=10000 $(PY) -m pytest -q tests/fuzz

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
