# Set-up and everyday commands. `make install && make demo` on a fresh machine,
# `make test` for the lint gate, the type check and the whole suite (it installs first
# when needed).

PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
	2>/dev/null && echo $$p && break; done)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test test-oldest oldest-env typecheck bench fuzz clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || (echo "error: Python 3.11 or newer is required" >&2; exit 2)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[test,examples]'
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/collatz.py

# the lint gate (ruff, configured in pyproject.toml), the type check, the whole suite
# (the long tier, `-m long`, included), then the core of the suite on the oldest JAX
# the project supports. The suite runs in TEST_WORKERS processes (pytest-xdist), which
# take tests as they become free (`worksteal`), and ends with its 10 slowest tests.
# `pytest -m "not long"` is the quick run while working.
TEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist worksteal --durations=10
# The tests' programs are small and compiled once each, so compiling them is most of
# the suite's time: XLA's CPU backend generates their machine code without LLVM's
# optimisations (about 15% of the suite). The level changes how fast the machine
# code runs, not what it computes; the benchmarks run at XLA's default.
TEST_XLA_FLAGS := --xla_backend_optimization_level=0 $(XLA_FLAGS)

test: $(STAMP)
	$(PY) -m ruff check .
	@$(MAKE) --no-print-directory typecheck
	@# the oldest JAX's environment installs (mostly waiting on files) while the suite runs
	@mkdir -p build; $(MAKE) --no-print-directory oldest-env >build/oldest-env.log 2>&1 & \
	env=$$!; XLA_FLAGS='$(TEST_XLA_FLAGS)' $(PY) -m pytest -q $(PYTEST_PARALLEL); suite=$$?; \
	wait $$env || { cat build/oldest-env.log; exit 1; }; exit $$suite
	@$(MAKE) --no-print-directory test-oldest

# The oldest supported JAX (autograph/jax_internals.py's OLDEST, pyproject.toml's
# `jax>=`), in an environment of its own, on the tests of what meets JAX: the
# operators, the JAX shims, autograph.function, and derivatives through loops up to
# the second (the converters' own tests rewrite source, the same on every JAX; the
# ecosystem tests need Flax and Equinox releases of their own; the fuzzer's long
# budget runs once, above), without the long tier, with two of the four programs
# reverse mode is checked on (Newton and bisection), and without the vmapped second
# derivatives and the backward pass's memory, which the suite checks above (they go
# through the same rules). About a minute.
OLDEST_JAX := 0.7.2
OLDEST_SKIP := not adaptive_ode and not line_search and not second_derivatives_under_vmap \
	and not memory_of_the_backward_pass
OLDEST_VENV := build/venv-jax-$(OLDEST_JAX)
OLDEST_TESTS := tests/test_jax_internals.py tests/test_jaxprs.py \
	tests/test_dispatch.py tests/test_api.py tests/test_loops_transforms.py \
	tests/test_reverse_mode_loops.py tests/test_number_values.py tests/test_run_time_errors.py \
	tests/test_math_module.py "tests/test_builtins.py::test_in_a_traced_array_on_every_supported_jax" \
	"tests/runtime/test_checkpointed.py::test_second_forms_are_each_others_transposes"

oldest-env: $(OLDEST_VENV)/.installed

$(OLDEST_VENV)/.installed: pyproject.toml
	@test -n "$(PYTHON)" || (echo "error: Python 3.11 or newer is required" >&2; exit 2)
	@test -x $(OLDEST_VENV)/bin/python || $(PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/python -m pip install -q --disable-pip-version-check \
		'jax==$(OLDEST_JAX)' 'jaxlib==$(OLDEST_JAX)' -e '.[test]'
	@touch $@

test-oldest: oldest-env
	XLA_FLAGS='$(TEST_XLA_FLAGS)' $(OLDEST_VENV)/bin/python -m pytest -q $(PYTEST_PARALLEL) \
		$(OLDEST_TESTS) -m 'not long' \
		-k "$(OLDEST_SKIP)"

# The type check (mypy, configured in pyproject.toml's [tool.mypy]). The folders
# converters/ and runtime/ install as autograph.converters and autograph.runtime
# ([tool.setuptools.package-dir]); mypy names modules by where their files lie and
# has no such mapping. Checking the folders in place would make them top-level
# `converters` and `runtime`, and mypy cannot use the editable install either: it
# maps them with an import hook, which mypy does not run. So the package is laid
# out as it installs, in symbolic links under build/typecheck/ (remade each run,
# so new modules are included; the files stay the real ones), and checked there.
# Errors name build/typecheck/autograph/... paths, which open the real files.
# About 6 s from scratch; mypy's cache (build/mypy_cache) makes later runs fast.
TYPECHECK_TREE := build/typecheck/autograph

typecheck: $(STAMP)
	@rm -rf build/typecheck && mkdir -p $(TYPECHECK_TREE)
	@cd $(TYPECHECK_TREE) && ln -s ../../../autograph/* ../../../converters ../../../runtime .
	$(PY) -m mypy $(TYPECHECK_TREE)

bench: $(STAMP)
	$(PY) benchmarks/run.py

# The long differential fuzzing run (CI runs a small budget inside `make test`).
fuzz: $(STAMP)
	AUTOGRAPH_FUZZ_EXAMPLES=10000 $(PY) -m pytest -q tests/fuzz

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
