"""The PCIe round trip's host pattern (nodeqc.backends.cupy_compute.byte_ramp): byte i is i mod 256
at every length, built without CuPy or a GPU."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from nodeqc.backends.cupy_compute import byte_ramp


@given(st.integers(min_value=0, max_value=70_000))
def test_byte_i_is_i_mod_256_at_any_length(n):
    ramp = byte_ramp(n)
    assert ramp.dtype == np.uint8 and ramp.shape == (n,)
    assert np.array_equal(ramp, (np.arange(n, dtype=np.uint64) % 256).astype(np.uint8))


def test_a_chunk_moved_by_one_byte_no_longer_matches():
    """The pattern exists to catch a shifted copy: a buffer off by one byte differs everywhere."""
    ramp = byte_ramp(1 << 16)
    assert not np.any(ramp[1:] == ramp[:-1])
