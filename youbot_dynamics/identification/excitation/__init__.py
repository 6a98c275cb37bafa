"""Excitation design: :mod:`.trajectories`, :mod:`.limits`, :mod:`.clearance`, :mod:`.criterion`,
:mod:`.design` (optimal trajectories), :mod:`.waypoints` (the seed's random configurations)."""
