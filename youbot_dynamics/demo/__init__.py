"""``make demo``: the kinematics demonstration (:mod:`.kinematics_demo`), the simulator demo
(:mod:`.simulation`) and the main job (:mod:`.job`, identify, regulate, track; its external-torque
part in :mod:`.external`). Orchestration over the package's nodes; nothing below imports it."""
