"""Finding the shipped generated regressor module without importing sympy.

``generated_youbot.py`` (written by :mod:`.symbolic`) holds the compiled regressor of the default
youBot chain. A chain may use it only if its constants are the ones it was generated for: the
:func:`chain_key` of the chain equals the module's ``CHAIN_KEY``. This module is imported by
:class:`~youbot_dynamics.dynamics.model.DynamicModel` on every model load, so it must stay light
(the symbolic derivation, with sympy, is only needed to regenerate the code).
"""
from __future__ import annotations

import types

import numpy as np

from .chain import DHChain

__all__ = ["ChainKey", "chain_key", "shipped_module"]

ChainKey = tuple[tuple[float, ...], ...]


def chain_key(chain: DHChain) -> ChainKey:
    """Hashable constants of a chain that determine its regressor (the name does not)."""
    return tuple(tuple(float(x) for x in np.asarray(arr, dtype=float).ravel())
                 for arr in (chain.a, chain.alpha, chain.d, chain.theta_offset, chain.direction, chain.gravity))


def shipped_module(chain: DHChain) -> types.ModuleType | None:
    """The shipped ``generated_youbot`` if it was generated for ``chain``'s constants, else None."""
    try:
        from . import generated_youbot
    except ImportError:  # pragma: no cover - the module is shipped
        return None
    return generated_youbot if generated_youbot.CHAIN_KEY == chain_key(chain) else None
