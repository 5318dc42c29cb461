"""numpy's BLAS on one thread, for Triton's CPU interpreter.

The interpreter computes every ``tl.dot`` with ``np.matmul``. numpy's bundled OpenBLAS
splits a matrix product over worker threads once it is larger than 2**18 multiply-adds, and
on a busy 2-core machine those spinning workers make a dot 10-1000x slower, so the attention
tiles used to stay below that size. Told to use one thread, OpenBLAS runs every dot on the
calling thread, and tiles can grow until a long prompt takes a few programs instead of
hundreds (the interpreter's cost is per operation, not per element). Only numpy's own
OpenBLAS is touched: torch's CPU operations use their own BLAS.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

# OpenBLAS's setters and getters, by the names its builds export (scipy-openblas wheels
# prefix them; the 64-bit-integer builds add a suffix)
_NAMES = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)


def _numpy_openblas() -> list[Path]:
    """The OpenBLAS libraries this process loaded from numpy's installation (Linux)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    home = Path(np.__file__).resolve().parent.parent  # site-packages: numpy/ and numpy.libs/
    found: set[Path] = set()
    for line in maps.splitlines():
        path = Path(line.split()[-1]) if "/" in line else None
        if (
            path is not None
            and "openblas" in path.name.lower()
            and path.parent.name in ("numpy.libs", ".libs")
            and path.is_relative_to(home)
        ):
            found.add(path)
    return sorted(found)


def one_blas_thread() -> bool:
    """Make numpy's OpenBLAS run on the calling thread only; True once it reports one thread
    (also when the environment already said so), False where numpy uses another BLAS or
    the library cannot be reached (then dots must stay small enough to be single-threaded
    by themselves)."""
    np.ones((2, 2)) @ np.ones((2, 2))  # numpy loads its BLAS on first use at the latest
    for path in _numpy_openblas():
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        for setter, getter in _NAMES:
            if hasattr(lib, setter) and hasattr(lib, getter):
                getattr(lib, setter)(ctypes.c_int(1))
                get = getattr(lib, getter)
                get.restype = ctypes.c_int
                return bool(get() == 1)
    return False
