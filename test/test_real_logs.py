"""Real logs as first-class input (issue 13 item 2, data loading): the five real youBot recordings
load with every cleaning decision counted, checked against counts made here directly from the raw
CSV; synthetic logs with repeated stamps, stale rows, gaps, time going backwards, short pieces,
other rates and other file names; malformed files keep errors naming file, line and column."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.files.dataio import DataFileError, write_csv
from youbot_dynamics.identification.estimation.cleaning import CleanRecording, clean_recording, describe_cleaning
from youbot_dynamics.identification.io.dataset import (Dataset, IdentificationError, RawRecording, joint_columns,
                                                       read_csv_raw, recording_format)
from youbot_dynamics.identification.io.recordings import load_dataset, load_recording
from conftest import real_data_folder

ARM = default_arm()
N = ARM.n_joints
REAL_DATA = real_data_folder()
REAL_FILES = sorted(REAL_DATA.glob("real_*.csv"))
HEADER = ["t", *joint_columns("q", N), *joint_columns("dq", N), *joint_columns("tau", N)]


def rows_for(t: np.ndarray, seed: int = 0) -> np.ndarray:
    """Rows ``t, q, dq, tau`` of a smooth motion with noisy torques (no two rows alike)."""
    rng = np.random.default_rng(seed)
    phase = np.arange(1, N + 1)[None, :]
    q = 0.5 * np.sin(0.7 * t[:, None] * phase) + 1.0
    dq = 0.35 * phase * np.cos(0.7 * t[:, None] * phase)
    tau = np.sin(q) + 0.01 * rng.normal(size=q.shape)
    return np.hstack([t[:, None], q, dq, tau])


def regular_times(rate: float, duration: float, jitter: float = 0.0, seed: int = 1) -> np.ndarray:
    """Stamps at ``rate`` Hz over ``duration`` s, each moved by up to ``jitter`` of a step (stays increasing)."""
    k = np.arange(int(round(rate * duration)) + 1)
    noise = np.random.default_rng(seed).uniform(-jitter, jitter, size=k.size) if jitter else 0.0
    return (k + noise) / rate


def write_rows(path: Path, rows: np.ndarray, header: list[str] = HEADER) -> Path:
    write_csv(path, header, rows)
    return path


def clean(path: Path, **kwargs) -> CleanRecording:
    result = load_recording(path, N, **kwargs)
    json.dumps(result.log, allow_nan=False)  # plain JSON data, as report.json needs
    for segment in result.segments:
        assert np.all(np.diff(segment.t) > 0)
    assert result.log["rows_out"] == sum(s.n_samples for s in result.segments)
    return result


# -- the five real recordings ---------------------------------------------------------------------


@pytest.mark.skipif(not REAL_FILES, reason=f"no real youBot recordings in {REAL_DATA}")
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_real_recording_loads_with_counts_checked_against_the_raw_file(path):
    raw = np.loadtxt(path, delimiter=",", skiprows=1)  # independent of the package's readers
    header = path.read_text().splitlines()[0].split(",")
    assert header == HEADER
    t, values = raw[:, 0], raw[:, 1:]
    step = np.diff(t)
    stale = np.all(values[1:] == values[:-1], axis=1)  # q, dq, tau all equal to the previous row's
    assert (step > 0).all()  # the real files hold no repeated stamps nor time going back
    result = clean(path)
    log = result.log
    assert log["rows_in"] == raw.shape[0] and log["format"] == "csv"
    assert log["repeated_values"]["rows_dropped"] == int(stale.sum())
    assert 9 <= stale.sum() <= 40  # as the data's README says
    assert log["repeated_values"]["rows"] == (np.flatnonzero(stale) + 1)[:20].tolist()
    assert log["repeated_stamps"]["rows_dropped"] == 0 and log["time_backwards"]["rows_dropped"] == 0
    assert log["gaps"]["count"] == 0 and log["short_segments"]["count"] == 0
    assert log["rows_out"] == raw.shape[0] - int(stale.sum())
    assert len(result.segments) == 1
    segment = result.segments[0]
    assert segment.source == str(path)  # not split: the file's own name
    keep = np.concatenate(([True], ~stale))
    np.testing.assert_array_equal(segment.t, t[keep])
    np.testing.assert_array_equal(np.hstack([segment.q, segment.dq, segment.tau]), values[keep])
    sampling = log["sampling"]
    assert sampling["median_step_s"] == pytest.approx(np.median(step))
    assert sampling["rate_hz"] == pytest.approx(300.0, rel=0.01)
    assert sampling["min_step_s"] == pytest.approx(step.min()) and sampling["max_step_s"] == pytest.approx(step.max())
    assert 0.07e-3 <= step.min() and step.max() <= 14.5e-3  # the README's 0.07-14 ms
    # dq from integer motor rpm: steps of 2 pi / (60 N) rad/s, N the gear ratio
    velocity = log["velocity"]
    assert velocity["recorded"] and all(velocity["quantised"])
    np.testing.assert_allclose(velocity["quantum"], 2 * np.pi / (60 * ARM.gear_ratio), rtol=1e-3)
    assert any("stale" in line for line in describe_cleaning(log))


@pytest.mark.skipif(not REAL_FILES, reason=f"no real youBot recordings in {REAL_DATA}")
def test_waypoint_files_are_not_recordings():
    for path in sorted(REAL_DATA.glob("waypoints_*.txt")):
        for load in (load_recording, load_dataset):
            with pytest.raises(DataFileError, match=rf"{path.name}: not a recording: no header with t, q1\.\.q5, "
                                                    r"tau1\.\.tau5 \(first line: '[-0-9.]"):
                load(path, N)


# -- synthetic logs: each defect -----------------------------------------------------------------


def test_repeated_stamps_are_dropped_and_counted(tmp_path):
    rows = rows_for(regular_times(300.0, 3.0))
    same = rows[10].copy()  # the recorder wrote row 10 twice
    other = rows[20].copy()
    other[1 + N + N :] += 0.5  # same stamp as row 20, other torques
    data = np.insert(rows, [11, 21], [same, other], axis=0)
    result = clean(write_rows(tmp_path / "stamps.csv", data))
    log = result.log
    assert log["repeated_stamps"] == {"rows_dropped": 2, "with_different_values": 1, "rows": [11, 22]}
    assert log["rows_out"] == rows.shape[0] and log["rows_in"] == rows.shape[0] + 2
    np.testing.assert_array_equal(result.segments[0].tau, rows[:, 1 + 2 * N :])  # the first row of a stamp is kept
    with pytest.raises(DataFileError, match="time repeats at sample 11"):  # load_dataset is as strict as before
        load_dataset(tmp_path / "stamps.csv", N)


def test_rows_repeating_the_previous_values_are_dropped(tmp_path):
    rows = rows_for(regular_times(300.0, 3.0))
    for k in (50, 100, 101):  # stale re-publications, one run of two
        rows[k, 1:] = rows[k - 1, 1:]
    log = clean(write_rows(tmp_path / "stale.csv", rows)).log
    assert log["repeated_values"] == {"enabled": True, "rows_dropped": 3, "longest_run": 2, "rows": [50, 100, 101]}
    assert log["gaps"]["count"] == 0  # three steps where one is missing: not a gap
    raw = read_csv_raw(tmp_path / "stale.csv", N)
    assert clean_recording(raw, drop_repeated_values=False).log["rows_out"] == rows.shape[0]


def test_a_gap_splits_the_recording_and_both_pieces_are_returned(tmp_path):
    t = regular_times(300.0, 6.0, jitter=0.2)
    rows = rows_for(t)
    hole = (t > 2.5) & (t < 3.0)
    result = clean(write_rows(tmp_path / "gap.csv", rows[~hole]))
    log = result.log
    assert log["gaps"]["count"] == 1
    gap = log["gaps"]["at"][0]
    before = t[np.flatnonzero(hole)[0] - 1]
    after = t[np.flatnonzero(hole)[-1] + 1]
    assert gap["t"] == pytest.approx(before) and gap["length_s"] == pytest.approx(after - before)
    assert gap["rows_dropped_inside"] == 0  # the recorder lost them, cleaning did not drop any
    assert len(result.segments) == 2
    first, second = result.segments
    assert first.t[-1] == pytest.approx(before) and second.t[0] == pytest.approx(after)
    assert first.source == f"{tmp_path / 'gap.csv'} (segment 1 of 2, 0.0-{before:.1f} s)"
    assert second.source.endswith(f"(segment 2 of 2, {after:.1f}-{t[-1]:.1f} s)")
    assert log["rows_out"] == int((~hole).sum())
    assert [s["rows"] for s in log["segments"]] == [first.n_samples, second.n_samples]


def test_a_long_run_of_stale_rows_is_a_gap_too(tmp_path):
    rows = rows_for(regular_times(300.0, 4.0))
    rows[600:700, 1:] = rows[599, 1:]  # the recorder republished one state for 1/3 s
    result = clean(write_rows(tmp_path / "stuck.csv", rows))
    log = result.log
    assert log["repeated_values"]["rows_dropped"] == 100 and log["repeated_values"]["longest_run"] == 100
    assert log["gaps"]["count"] == 1 and log["gaps"]["at"][0]["rows_dropped_inside"] == 100
    assert len(result.segments) == 2


def test_time_going_backwards_is_dropped_or_split(tmp_path):
    rows = rows_for(regular_times(300.0, 3.0))
    swapped = rows.copy()
    swapped[[40, 41]] = rows[[41, 40]]  # two rows out of order: the second is behind
    log = clean(write_rows(tmp_path / "swap.csv", swapped)).log
    assert log["time_backwards"]["rows_dropped"] == 1 and log["time_backwards"]["rows"] == [41]
    assert log["time_backwards"]["reset_count"] == 0
    assert log["rows_out"] == rows.shape[0] - 1
    # a second run appended with the clock restarted at 0: a new piece, no row lost
    second = rows_for(regular_times(300.0, 2.0), seed=5)
    result = clean(write_rows(tmp_path / "reset.csv", np.vstack([rows, second])))
    log = result.log
    assert log["time_backwards"]["rows_dropped"] == 0
    assert log["time_backwards"]["resets"] == [{"row": rows.shape[0], "t_before": rows[-1, 0], "t_after": 0.0}]
    assert [s.n_samples for s in result.segments] == [rows.shape[0], second.shape[0]]
    assert "clock reset" in " ".join(describe_cleaning(log))


def test_a_short_piece_is_dropped_and_counted(tmp_path):
    t = regular_times(300.0, 5.0)
    keep = (t < 3.0) | (t > 4.4)  # a 0.6 s piece after a 1.4 s gap
    result = clean(write_rows(tmp_path / "short.csv", rows_for(t)[keep]))
    log = result.log
    assert log["gaps"]["count"] == 1 and log["short_segments"]["count"] == 1
    short = t[t > 4.4]
    assert log["short_segments"]["rows_dropped"] == short.size
    assert log["short_segments"]["durations_s"] == [pytest.approx(short[-1] - short[0])]
    assert len(result.segments) == 1 and result.segments[0].t[-1] < 3.0
    assert result.segments[0].source.endswith("(segment 1 of 1, 0.0-3.0 s)")  # a piece of a split recording
    with pytest.raises(IdentificationError, match=r"short\.csv: nothing left after cleaning: .*shorter than 4 s"):
        load_recording(tmp_path / "short.csv", N, min_segment=4.0)


@pytest.mark.parametrize("rate", [200.0, 1000.0])
def test_rates_200_and_1000_hz_with_jitter_are_cleaned_alike(tmp_path, rate):
    t = regular_times(rate, 3.0, jitter=0.3)
    result = clean(write_rows(tmp_path / f"r{rate:g}.csv", rows_for(t)))
    log = result.log
    assert log["sampling"]["rate_hz"] == pytest.approx(rate, rel=0.03)
    assert log["rows_out"] == t.size and len(result.segments) == 1
    assert log["gaps"]["count"] == 0 and log["velocity"]["recorded"]
    assert log["velocity"]["quantised"] == [False] * N  # continuous velocities are not called quantised


# -- file names and formats -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["run.txt", "run", "run.log"])
def test_a_csv_recording_with_another_name_is_read_by_content(tmp_path, name):
    rows = rows_for(regular_times(250.0, 2.0))
    path = write_rows(tmp_path / name, rows)
    assert recording_format(path, N) == "csv"
    result = clean(path)
    np.testing.assert_array_equal(result.segments[0].q, rows[:, 1 : N + 1])
    np.testing.assert_array_equal(load_dataset(path, N).q, rows[:, 1 : N + 1])  # identify's reader too


def test_files_that_are_no_recording_are_refused_clearly(tmp_path):
    waypoints = tmp_path / "waypoints_01.txt"
    waypoints.write_text("0.1 0.2 -0.3 0.4 0.5\n0.2 0.3 -0.4 0.5 0.6\n")
    with pytest.raises(DataFileError, match=r"waypoints_01\.txt: not a recording: no header with t, q1\.\.q5, "
                                            r"tau1\.\.tau5 .*rosbag2 folder"):
        load_recording(waypoints, N)
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00\x01" * 10)
    with pytest.raises(DataFileError, match=r"blob\.bin: not a recording: a binary file"):
        load_recording(binary, N)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(DataFileError, match=r"empty\.txt: not a recording: .*first line: empty"):
        load_recording(empty, N)
    with pytest.raises(DataFileError, match=r"cannot read .*missing\.txt: no such file or folder"):
        load_recording(tmp_path / "missing.txt", N)


def test_malformed_recordings_name_file_column_and_line(tmp_path):
    rows = rows_for(regular_times(300.0, 2.0))
    no_tau3 = [c for c in HEADER if c != "tau3"]
    path = write_rows(tmp_path / "cols.txt", np.delete(rows, HEADER.index("tau3"), axis=1), no_tau3)
    with pytest.raises(DataFileError, match=r"cols\.txt: missing column\(s\) tau3"):
        load_recording(path, N)
    no_dq4 = [c for c in HEADER if c != "dq4"]
    path = write_rows(tmp_path / "dq.csv", np.delete(rows, HEADER.index("dq4"), axis=1), no_dq4)
    with pytest.raises(DataFileError, match=r"dq\.csv: missing column\(s\) dq4"):
        load_recording(path, N)
    path = write_rows(tmp_path / "nan.txt", rows)
    lines = path.read_text().splitlines()
    cells = lines[7].split(",")
    cells[HEADER.index("q2")] = "nan"
    lines[7] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFileError, match=r"nan\.txt:8: column q2: non-finite value 'nan'"):
        load_recording(path, N)
    with pytest.raises(IdentificationError, match=r"mem: tau3 is nan at sample 4"):
        bad = rows[:, 1 + 2 * N :].copy()
        bad[4, 2] = np.nan
        RawRecording(rows[:, 0], rows[:, 1 : N + 1], bad, source="mem")


def test_in_memory_datasets_and_bad_options():
    rows = rows_for(regular_times(300.0, 2.0))
    data = Dataset(rows[:, 0], rows[:, 1 : N + 1], rows[:, 1 + 2 * N :], source="mem")
    result = clean_recording(data)
    assert result.segments[0].source == "mem" and result.log["velocity"] == {"recorded": False, "quantum": None,
                                                                             "quantised": None}
    with pytest.raises(ValueError, match="max_gap"):
        clean_recording(data, max_gap=1.0)
    with pytest.raises(ValueError, match="min_segment"):
        clean_recording(data, min_segment=float("nan"))
    flat = RawRecording(np.zeros(5), np.zeros((5, N)), np.zeros((5, N)), source="flat")
    with pytest.raises(IdentificationError, match="flat: time never increases"):
        clean_recording(flat)


def test_a_bag_with_repeated_stamps_is_cleaned(tmp_path):
    pytest.importorskip("rosbags")
    from youbot_dynamics.identification.io.bagio import IncrementalBagWriter, joint_state_message

    rows = rows_for(regular_times(300.0, 2.0))
    stamps = np.round(rows[:, 0] * 1e9).astype(np.int64) + 1_700_000_000_000_000_000
    order = list(range(rows.shape[0]))
    order.insert(31, 30)  # message 30 published twice under its stamp
    with IncrementalBagWriter(tmp_path / "bag") as writer:
        for k in order:
            writer.write(int(stamps[k]), joint_state_message(writer.store, int(stamps[k]), ARM.joint_names,
                                                             rows[k, 1 : N + 1], rows[k, 1 + N : 1 + 2 * N],
                                                             rows[k, 1 + 2 * N :]))
    with pytest.raises(IdentificationError, match="time repeats at sample 31"):
        load_dataset(tmp_path / "bag", N, ARM.joint_names)
    result = clean(tmp_path / "bag", joint_names=ARM.joint_names)
    assert result.log["repeated_stamps"]["rows_dropped"] == 1 and result.log["rows_out"] == rows.shape[0]
    assert result.log["format"] == "bag"
    np.testing.assert_allclose(result.segments[0].q, rows[:, 1 : N + 1])
    np.testing.assert_allclose(result.segments[0].t, rows[:, 0] - rows[0, 0], atol=1e-9)
    clean_bag = tmp_path / "ok"
    with IncrementalBagWriter(clean_bag) as writer:
        for k in range(rows.shape[0]):
            writer.write(int(stamps[k]), joint_state_message(writer.store, int(stamps[k]), ARM.joint_names,
                                                             rows[k, 1 : N + 1], rows[k, 1 + N : 1 + 2 * N],
                                                             rows[k, 1 + 2 * N :]))
    mcap = next(clean_bag.glob("*.mcap"))
    assert clean(mcap, joint_names=ARM.joint_names).log["rows_out"] == rows.shape[0]  # a bare .mcap file
    renamed = tmp_path / "recording.dat"  # a bag file under another name: told how to read it
    renamed.write_bytes(mcap.read_bytes())
    with pytest.raises(DataFileError, match=r"recording\.dat: a rosbag2 \.mcap storage file under another name: "
                                            r"rename it to recording\.mcap"):
        load_recording(renamed, N)
