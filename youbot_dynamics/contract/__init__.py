"""The ROS-facing contract, without ROS: the arm's topic names (:mod:`.topics`), the controllers'
registry (:mod:`.controller_registry`), the nodes' parameter schemas (:mod:`.parameter_schema`) and the
parameters the fields of their goals and requests override (:mod:`.request_fields`).
The launch files' shared pieces, which need launch_ros, are :mod:`youbot_dynamics.nodes.launch_pieces`."""
