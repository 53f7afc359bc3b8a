"""Test configuration: the suite runs on whatever platform JAX finds (CPU, GPU, TPU)."""

import pytest


@pytest.fixture
def staged_small_loops(monkeypatch):
    """Stages static-trip `for` loops of any length (short ones otherwise run as Python)."""
    from autograph.runtime.loop_forms import loop_plan
    monkeypatch.setattr(loop_plan, "PYTHON_TRIPS", 0)
