"""doc/parameters.md is what the nodes declare: regenerated from their parameter schemas it equals the
shipped page (that the nodes declare exactly their schema is test_parameter_schema's)."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "doc" / "parameters.md"


def test_parameter_page_is_the_schemas():
    from youbot_dynamics.nodes.parameter_table import markdown

    assert PAGE.read_text() == markdown(), (
        "doc/parameters.md differs from the parameter schemas: "
        "python -m youbot_dynamics.nodes.parameter_table > doc/parameters.md")


def test_every_node_executable_has_its_table():
    from youbot_dynamics.contract.controller_registry import CONTROLLERS
    from youbot_dynamics.nodes.parameter_table import NODES

    text = (ROOT / "setup.py").read_text()
    assert {entry.node for entry in CONTROLLERS} <= set(NODES)
    for name in ("sim_node", "youbot_driver", "kinematics_node", "identification_node", "external_torque_observer"):
        assert f"'{name} = youbot_dynamics.nodes.{name}:main'" in text and name in NODES
