"""Test configuration: the suite runs on whatever platform JAX finds (CPU, GPU, TPU)."""
