"""Benchmarks (not tests): ``python -m bench`` times every operation against its baselines."""
