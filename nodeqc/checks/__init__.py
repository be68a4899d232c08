"""Checks, one module per family. Every verdict is a pure function of measurements and the profile,
so each is tested table-driven at its boundaries without hardware."""
