"""doc/parameters.md is what the nodes declare: regenerated from their declarations (every node
built once in a private context, on the module's localhost domain) it equals the shipped page."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("rclpy")

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "doc" / "parameters.md"


def test_parameter_page_is_the_nodes_declarations(ros_domain):
    from youbot_dynamics.nodes.parameter_table import markdown

    page = markdown()
    assert PAGE.read_text() == page, (
        "doc/parameters.md differs from the nodes' declarations: "
        "python -m youbot_dynamics.nodes.parameter_table > doc/parameters.md")


def test_every_node_executable_has_its_table():
    from youbot_dynamics.controller_registry import CONTROLLERS
    from youbot_dynamics.nodes.parameter_table import NODES

    text = (ROOT / "setup.py").read_text()
    executables = {name for name, *_ in NODES}
    assert {entry.node for entry in CONTROLLERS} <= executables
    for name in ("sim_node", "youbot_driver", "kinematics_node", "identification_node", "external_torque_observer"):
        assert f"'{name} = youbot_dynamics.nodes.{name}:main'" in text and name in executables
