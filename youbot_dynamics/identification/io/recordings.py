"""Recordings whatever their format: a :class:`~.dataset.Dataset` from CSV or a bag
(:func:`load_dataset`), and real logs in two steps (:func:`load_recording`) because a real
recorder writes rows a :class:`~.dataset.Dataset` refuses (repeated stamps, time going backwards):
:func:`read_recording_raw` (:func:`~.dataset.read_csv_raw` / :func:`read_bag_raw`) gives a
:class:`~.dataset.RawRecording` with every row as written, and
:func:`~..estimation.cleaning.clean_recording` turns it into time-ordered segments, counting every
row it drops. It sits above both readers (:mod:`.dataset`, :mod:`.bagio`): neither imports the other.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ...contract.topics import JOINT_STATES
from ..estimation.cleaning import CleanRecording, clean_recording
from .bagio import read_joint_state_arrays, read_joint_states
from .dataset import Dataset, RawRecording, read_csv_dataset, read_csv_raw, recording_format

__all__ = ["load_dataset", "read_bag_raw", "read_recording_raw", "load_recording"]


def load_dataset(path: str | Path, n_joints: int, joint_names: Sequence[str] | None = None,
                 topic: str = JOINT_STATES) -> Dataset:
    """A CSV file, or a rosbag2 folder / ``.mcap`` / ``.db3`` file with ``sensor_msgs/JointState``.

    The rows are taken as they are (a repeated stamp or time going backwards is an error): use
    :func:`load_recording` for real logs. A ``.csv`` file is read as CSV; an existing file with
    another name is read as CSV when its content is a CSV recording (:func:`recording_format`), so
    a recording named ``.txt`` loads; everything else goes to the bag reader as before.
    """
    path = Path(path)
    if path.suffix.lower() == ".csv" or (path.is_file() and recording_format(path, n_joints) == "csv"):
        return read_csv_dataset(path, n_joints)
    return read_joint_states(path, joint_names, topic, n_joints)


def read_bag_raw(path: str | Path, joint_names: Sequence[str] | None = None, topic: str = JOINT_STATES,
                 n_joints: int | None = None) -> RawRecording:
    """Every ``JointState`` message of ``topic`` in a bag, in the bag's order, time unchecked
    (:func:`.bagio.read_joint_state_arrays`: the same errors as :func:`.bagio.read_joint_states` for a
    missing file or topic, a corrupted bag, a message lacking a joint)."""
    t, q, tau, dq = read_joint_state_arrays(path, joint_names, topic, n_joints)
    return RawRecording(t, q, tau, dq, source=str(path))


def read_recording_raw(path: str | Path, n_joints: int, joint_names: Sequence[str] | None = None,
                       topic: str = JOINT_STATES) -> RawRecording:
    """Every row of a CSV recording (any file name, :func:`recording_format`) or a bag, uncleaned."""
    if recording_format(path, n_joints) == "csv":
        return read_csv_raw(path, n_joints)
    return read_bag_raw(path, joint_names, topic, n_joints)


def load_recording(path: str | Path, n_joints: int, joint_names: Sequence[str] | None = None,
                   topic: str = JOINT_STATES, *, max_gap: float = 5.0,
                   min_segment: float = 1.0) -> CleanRecording:
    """A real log, read whatever its name (:func:`read_recording_raw`) and cleaned
    (:func:`.cleaning.clean_recording`: repeated stamps, stale repeated rows and rows going back in
    time dropped and counted, split at gaps longer than ``max_gap`` median steps, pieces shorter
    than ``min_segment`` s dropped). The returned ``log`` says what was done, for ``report.json``,
    and with which reader (``log["format"]``: ``"csv"`` or ``"bag"``)."""
    fmt = recording_format(path, n_joints)
    raw = read_csv_raw(path, n_joints) if fmt == "csv" else read_bag_raw(path, joint_names, topic, n_joints)
    result = clean_recording(raw, max_gap=max_gap, min_segment=min_segment)
    result.log["format"] = fmt
    return result
