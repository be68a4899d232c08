"""Fake CuPy for tests (see tests/fake_cupy/README.md): numpy arrays on a pretend device."""

import numpy as _np

from cupy import cuda  # noqa: F401

float32 = _np.float32
ndarray = _np.ndarray
full = _np.full
empty_like = _np.empty_like
zeros = _np.zeros
count_nonzero = _np.count_nonzero
flatnonzero = _np.flatnonzero
asarray = _np.asarray
repeat = _np.repeat


def asnumpy(a):
    return _np.asarray(a)
