"""nodeqc: GPU node qualification and burn-in."""

__version__ = "0.1.0"
