"""Where the package's data files (``config/``, ``urdf/``, ``launch/``) are found.

Resolution order, first hit wins:

1. the ``YOUBOT_DYNAMICS_SHARE`` environment variable (a directory holding ``config/``);
2. the source tree next to this package (editable installs and a plain checkout);
3. the ROS 2 share directory (``colcon build`` or a wheel install: ``<prefix>/share/youbot_dynamics``).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE_NAME = "youbot_dynamics"


def _candidates() -> list[Path]:
    found = []
    env = os.environ.get("YOUBOT_DYNAMICS_SHARE")
    if env:
        found.append(Path(env))
    found.append(Path(__file__).resolve().parents[2])  # youbot_dynamics/files/paths.py -> the checkout
    try:
        from ament_index_python.packages import get_package_share_directory

        found.append(Path(get_package_share_directory(PACKAGE_NAME)))
    except Exception:  # noqa: BLE001 - ament index absent or package not registered
        pass
    found.append(Path(sys.prefix) / "share" / PACKAGE_NAME)
    return found


def share_directory() -> Path:
    """The directory holding the package's ``config/`` folder."""
    for candidate in _candidates():
        if (candidate / "config" / "youbot_arm.yaml").is_file():
            return candidate
    raise FileNotFoundError(
        "youbot_dynamics data files not found; set YOUBOT_DYNAMICS_SHARE to the folder holding config/"
        f" (looked in: {', '.join(str(c) for c in _candidates())})"
    )


def config_path(name: str) -> Path:
    """Path of a file in the package's ``config/`` folder."""
    return share_directory() / "config" / name
