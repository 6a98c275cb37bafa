"""Identification of the arm's dynamic parameters (seed 002, section 3), by concern:

* :mod:`.excitation`: the experiment design (``python -m youbot_dynamics excite``): trajectories
  (Fourier series, point-to-point schedules), the limits and clearances they respect, the
  criterion (condition number of the scaled base regressor), the optimal design, the seed's random
  configurations;
* :mod:`.experiment`: running it on the arm: the supervised session (approach, excite, hold,
  abort), the streamed horizons with their braking tails, the joint-state recorder;
* :mod:`.estimation`: from recorded data to a model (``python -m youbot_dynamics identify`` /
  ``calibrate``): cleaning of real logs, processing (filtering, differentiation, averaging), the
  least-squares estimators, friction fits, validation, the pipeline, recalibration (payload,
  friction);
* :mod:`.io`: the files: datasets (CSV), rosbag2 joint states, recordings in either format,
  trajectory files, reports.

The command-line front ends are in :mod:`youbot_dynamics.cli`; the node is
:mod:`youbot_dynamics.nodes.identification_node`.
"""
