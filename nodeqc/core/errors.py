"""Errors that end a run before or outside qualification: nodeqc could not do its job (exit 2)."""


def shown(text: str) -> str:
    """Text a person gave, as an error line quotes it: control characters (a newline, an escape
    sequence) written as escapes, so the message stays one line and the terminal shows it as typed."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class UsageError(Exception):
    """Bad input from the user: arguments, profile, scenario, key, report file.

    The message is one line that names what is wrong and where; the CLI prints it as is.
    """


class BackendUnavailable(Exception):
    """A hardware backend cannot be opened (no driver, no library). A verdict, not a usage error."""


class GpuLostError(Exception):
    """The GPU stopped answering (NVML GPU_IS_LOST, or a simulated fall off the bus)."""

    def __init__(self, index: int, detail: str = "GPU is lost"):
        super().__init__(f"gpu{index}: {detail}")
        self.index = index


class ComputeUnavailable(Exception):
    """GPU compute cannot start (CuPy missing, no CUDA runtime): stress checks report it as an error."""


class DtypeUnavailable(Exception):
    """One dtype's products cannot run on this GPU (no library for it, too old an architecture, the
    library offers no algorithm): that dtype is reported as not run with this reason, and the rest of
    the burn goes on. Never a failure of the GPU."""
