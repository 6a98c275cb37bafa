"""The loop a controller node runs in inside the arm's own process (:class:`ControllerHost`): the
driver's bus cycle (:class:`~.youbot_driver.DriverHost`) or the simulator's physics loop
(:class:`~.sim_node.SimHost`); doc/driver.md, "Control inside the bus cycle"."""
from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["ControllerHost"]

Array = np.ndarray


class ControllerHost(Protocol):
    """The loop a controller runs in, in the arm's process (doc/driver.md: "Control inside the bus cycle")."""

    #: cycles per second of the host's loop (the controller's ``rate`` must equal it)
    rate: float
    #: the loop, for the log ("youbot_driver's bus cycle")
    description: str
    #: where the release goes, for the log ("the driver's trajectory interface")
    release_target: str

    def release(self, times: Array, q: Array, dq: Array, ddq: Array) -> None:
        """Hand the arm to the drives' trajectory interface: waypoints ``times`` [s] from now;
        ``ValueError`` if refused."""

    def zero(self) -> None:
        """Zero effort from outside the loop (shutdown without a release)."""
