"""The package's ROS 2 nodes. A node executable handles SIGINT and SIGTERM from here on, before its
heavy imports (:mod:`.stop_signals`)."""
from .stop_signals import catch_stop_signals, started_as_node

if started_as_node():
    catch_stop_signals()
