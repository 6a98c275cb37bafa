"""Shared test helpers: a private, localhost-only ROS 2 domain per test module."""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

_ROS_VARIABLES = ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")


@contextmanager
def local_ros_domain(domain_id: str) -> Iterator[None]:
    """Set ``ROS_DOMAIN_ID`` and localhost-only discovery for the block, then restore both."""
    old = {k: os.environ.get(k) for k in _ROS_VARIABLES}
    os.environ["ROS_DOMAIN_ID"] = domain_id
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
