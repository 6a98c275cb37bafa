"""The node of a registry controller without a node class of its own (doc/adding_a_controller.md):
:func:`law_node_class` is the common :class:`~.controller_node.ControllerNode` named like the
entry's node, running its law; ``main_<controller>`` (module ``__getattr__``, PEP 562) is the
console script ``setup.py`` installs for it (:attr:`~..contract.controller_registry.ControllerEntry.entry_point`)."""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..contract.controller_registry import ControllerEntry, controller
from .controller_node import ControllerNode, run

__all__ = ["law_node_class"]


@functools.lru_cache(maxsize=None)
def law_node_class(entry: ControllerEntry) -> type[ControllerNode]:
    """:class:`ControllerNode` named ``entry.node``, running ``entry.law`` (one class per entry)."""

    def __init__(self: ControllerNode, **kwargs: Any) -> None:
        ControllerNode.__init__(self, entry.node, **kwargs)

    title = "".join(part.title() for part in entry.node.split("_"))
    return type(f"{title}Node", (ControllerNode,), {"__init__": __init__, "__doc__": f"{entry.summary} ({entry.law})."})


def __getattr__(name: str) -> Callable[[list[str] | None], int]:
    """``main_<controller>``: the entry point of a registry controller without a node class of its own."""
    if name.startswith("main_"):
        try:
            entry = controller(name[len("main_"):])
        except ValueError as exc:
            raise AttributeError(str(exc)) from None
        return functools.partial(run, law_node_class(entry), entry.node)
    raise AttributeError(f"module {__name__} has no attribute {name}")
