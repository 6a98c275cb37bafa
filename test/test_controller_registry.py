"""The controller registry names things that exist: each entry's console script resolves (its node
module's ``main``, or the common node's ``main_<name>``), its law is a class of the control core, its
parameter file is in config/ with a section for its node, names and nodes are unique; an unknown name
is refused with the known ones."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import yaml

from youbot_dynamics.contract.controller_registry import CONTROLLERS, controller, controller_names

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("entry", CONTROLLERS, ids=[e.name for e in CONTROLLERS])
def test_entry_names_what_exists(entry):
    module, law_class = entry.law.split(":")
    assert isinstance(getattr(importlib.import_module(module), law_class), type)
    doc = yaml.safe_load((ROOT / "config" / entry.params_file).read_text())
    assert "ros__parameters" in doc[entry.node]
    executable, _, target = entry.entry_point.partition(" = ")
    assert executable == entry.node
    module, _, function = target.partition(":")
    pytest.importorskip("rclpy")
    assert callable(getattr(importlib.import_module(module), function))
    from youbot_dynamics.nodes.controller_node import ControllerNode
    assert issubclass(entry.node_type(), ControllerNode)
    law = getattr(importlib.import_module(entry.law.split(":")[0]), law_class)
    assert entry.node_type() is entry.node_type() and law.Config is not None


def test_a_generic_entry_point_names_a_registry_controller():
    pytest.importorskip("rclpy")
    from youbot_dynamics.nodes import law_controller

    with pytest.raises(AttributeError, match="unknown controller 'nope'"):
        law_controller.main_nope  # noqa: B018 - the module's __getattr__ refuses it
    with pytest.raises(AttributeError):
        law_controller.nothing_of_that_name  # noqa: B018


def test_names_are_unique_and_unknown_ones_refused():
    """Derived from the table (a new entry needs no edit here)."""
    assert len(set(controller_names())) == len(CONTROLLERS) == len({e.node for e in CONTROLLERS})
    for entry in CONTROLLERS:
        assert controller(entry.name) is entry
    unknown = "_".join(controller_names()) + "_x"
    known = re.escape(str(controller_names()))
    with pytest.raises(ValueError, match=rf"unknown controller '{unknown}'; known: {known}"):
        controller(unknown)
