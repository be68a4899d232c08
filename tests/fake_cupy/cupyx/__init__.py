"""Fake cupyx for tests (see tests/fake_cupy/README.md)."""
