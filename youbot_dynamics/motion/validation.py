"""Joint-value arrays from outside (a message, a file, a caller): one check for every path that
takes them (the command checker of the simulator and the driver, the trajectory planners)."""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["joint_values"]


def joint_values(values: Any, n: int, name: str, error: type[Exception],
                 rows: int | None = None) -> NDArray[np.float64]:
    """``values`` as finite floats of shape ``(n,)`` (``rows`` None) or ``(rows, n)``; else ``error``
    with ``name`` and the reason (not numbers, the shape, NaN or infinity)."""
    shape = (n,) if rows is None else (rows, n)
    try:
        arr = np.array(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise error(f"{name}: expected numbers ({exc})") from None
    if arr.shape != shape:
        raise error(f"{name}: expected shape {shape} ({n} joint values per row), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise error(f"{name}: contains NaN or infinite values: {arr.tolist()}")
    return arr
