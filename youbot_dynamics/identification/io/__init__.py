"""Identification files: :mod:`.dataset` (CSV datasets, raw rows), :mod:`.bagio` (rosbag2 joint
states), :mod:`.recordings` (either format, real logs cleaned), :mod:`.trajfile` (trajectory
files), :mod:`.report` (reports, progress)."""
