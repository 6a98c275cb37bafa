"""Identification of the arm's dynamic parameters (seed 002, section 3).

Excitation, the experiment design (``python -m youbot_dynamics excite``):
:mod:`.trajectories` (Fourier series and point-to-point schedules), :mod:`.limits` and
:mod:`.clearance` (what a trajectory must respect), :mod:`.criterion` (condition number of the
scaled base regressor), :mod:`.excitation` (optimal design), :mod:`.waypoints` (the seed's random
configurations), :mod:`.trajfile` (the trajectory file the identification node reads).

Estimation from recorded data (``python -m youbot_dynamics identify``): :mod:`.identify_cli` and
the modules it names.
"""
