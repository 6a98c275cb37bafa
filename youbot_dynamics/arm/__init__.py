"""The arm: its description (the single source of truth, :mod:`.description`, read from
``config/youbot_arm.yaml``), rigid transforms, forward and inverse kinematics, and the files
generated from the description (URDF, the ros2_control xacro) or imported into it (the upstream
youbot_description inertials). :mod:`.poe` is a second, independent formulation of the forward
kinematics (product of exponentials), kept as a reference for the tests."""
