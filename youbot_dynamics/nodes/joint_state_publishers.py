"""The publishers of the joint-state topic a controller node listens to (:class:`JointStatePublishers`):
more than ``joint_state_publishers_max`` (another simulator or driver in the ROS domain) and the
other arm's states would be taken for the arm's; the controller refuses to enable and faults
(doc/safety.md)."""
from __future__ import annotations

from rclpy.node import Node

__all__ = ["JointStatePublishers", "PUBLISHERS_CHECK_PERIOD", "UNKNOWN_NODE", "publisher_name"]

PUBLISHERS_CHECK_PERIOD = 0.2  # [s] between two looks at the publishers of the joint-state topic
UNKNOWN_NODE = "_NODE_NAME_UNKNOWN_"  # rmw's node name of a publisher whose node is not (yet) known


def publisher_name(info: object) -> str:
    """``/namespace/node`` of a publisher's endpoint info; one whose node the graph does not know (not
    discovered yet, or no ROS node: a bare DDS writer) in words, with the start of its gid."""
    if info.node_name == UNKNOWN_NODE:
        gid = "".join(f"{b:02x}" for b in list(info.endpoint_gid)[:8])
        return f"a publisher of an unknown node (not discovered yet, or not a ROS node; gid {gid}...)"
    return f"{info.node_namespace.rstrip('/')}/{info.node_name}"


class JointStatePublishers:
    """The publishers of ``topic`` on ``node``'s graph against ``maximum`` (0: not checked)."""

    def __init__(self, node: Node, topic: str, maximum: int) -> None:
        self._node = node
        self.topic = topic
        self.maximum = maximum
        self._due = 0.0

    def problem(self) -> str | None:
        """Why the publishers of the topic are more than the maximum (naming them), or ``None``."""
        if not self.maximum:
            return None
        infos = self._node.get_publishers_info_by_topic(self.topic)
        if len(infos) <= self.maximum:
            return None
        names = ", ".join(sorted(publisher_name(i) for i in infos))
        return (f"{len(infos)} publishers of {self.topic} ({names}), at most {self.maximum} expected: another "
                f"simulator or driver in this ROS domain? Its states would be taken for the arm's "
                f"(joint_state_publishers_max)")

    def check(self, now: float) -> str | None:
        """Every :data:`PUBLISHERS_CHECK_PERIOD` [s] of ``now`` (steady clock): :meth:`problem`, else None.
        Counting takes ~5 us (median; p99 60 us), naming them ~60 us (only when too many)."""
        if not self.maximum or now < self._due:
            return None
        self._due = now + PUBLISHERS_CHECK_PERIOD
        if self._node.count_publishers(self.topic) <= self.maximum:
            return None
        return self.problem()
