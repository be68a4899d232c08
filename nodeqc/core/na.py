"""'Not available': the value of a reading the hardware or driver cannot give.

NotSupported on this SKU, a function the driver lacks, a field read from a lost GPU: all become NA,
never a crash. NA behaves like NaN (comparisons are false, arithmetic stays NA, float() is nan),
is falsy, prints as N/A and is written to JSON as null.
"""

from __future__ import annotations

import math
from typing import Any


class _NotAvailable:
    _instance: "_NotAvailable | None" = None

    def __new__(cls) -> "_NotAvailable":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __reduce__(self) -> str:  # pickles as the singleton across worker processes
        return "NA"

    def __repr__(self) -> str:
        return "NA"

    def __str__(self) -> str:
        return "N/A"

    def __format__(self, spec: str) -> str:
        return "N/A"

    def __bool__(self) -> bool:
        return False

    def __float__(self) -> float:
        return math.nan

    def __hash__(self) -> int:
        return hash("nodeqc.NA")

    def __eq__(self, other: object) -> bool:
        return other is self

    def __ne__(self, other: object) -> bool:
        return other is not self

    def _false(self, other: object) -> bool:
        return False

    __lt__ = __le__ = __gt__ = __ge__ = _false

    def _na(self, *args: object) -> "_NotAvailable":
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _na
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __neg__ = __abs__ = _na


NA = _NotAvailable()


def is_na(value: Any) -> bool:
    """True for NA, None and NaN: every way a reading can be missing."""
    return value is NA or value is None or (isinstance(value, float) and math.isnan(value))


def or_none(value: Any) -> Any:
    """The value for JSON: NA and NaN become None."""
    return None if is_na(value) else value
