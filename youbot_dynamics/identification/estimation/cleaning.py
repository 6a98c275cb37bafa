"""Cleaning a real joint-state log into time-ordered pieces a :class:`~.dataset.Dataset` accepts.

A real recorder (the youBot driver's ``/joint_states`` at about 300 Hz, a rosbag, a CSV logger)
writes rows that an identification cannot use as they are; :func:`clean_recording` finds them,
drops them and counts each decision in a plain-JSON ``log`` (for ``report.json``), never silently:

1. **Repeated stamps**: a row whose time equals the last kept row's. It cannot be placed in time,
   so it is dropped (the first row of that stamp is kept); the log says how many of these carried
   values different from the kept row.
2. **Time going backwards**: a row earlier than the last kept row. A small step back (at most the
   gap threshold) is a row out of order and is dropped; a larger one is a clock reset (a new
   recording in the same file, a restarted sim clock) and starts a new piece, keeping the row.
3. **Repeated values**: a row whose ``q``, ``tau`` (and ``dq``, ``ddq`` when recorded) all equal
   the previous kept row's, exactly. A measured motor current is never the same to the last digit
   twice in a row on five joints, so such a row is a recorder re-publishing stale data under a new
   stamp (the real youBot logs hold 9-40 per file); it would put a zero acceleration and a wrong
   time on a sample. Dropped, with the longest run of them.
4. **Gaps**: a step longer than ``max_gap`` times the median step (the median of the input's
   positive steps, so no sample rate is assumed: 200 Hz and 1000 Hz logs are cleaned alike) splits
   the recording; filtering and differentiation must not bridge a hole. Gaps are looked for after
   step 3, so a long run of stale rows is a gap too (the log says how many rows were dropped
   inside each gap).
5. **Short pieces**: a piece shorter than ``min_segment`` seconds (or of one row) is dropped; it is
   too short to filter and differentiate.

Velocities quantised to motor rpm or lagging the position are not cleaning's business (the
processing decides what to use); the log only says whether ``dq`` was recorded and its quantum per
joint (the smallest non-zero change between rows) so the report can say so.

Row numbers in the log are 0-based indices of the input rows (``sample k`` as in the
:class:`~.dataset.Dataset` messages; in a CSV file without blank lines, line ``k + 2``). Lists of
rows and gaps are cut at :data:`MAX_LISTED` entries; the counts beside them are exact.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..io.dataset import Dataset, IdentificationError, RawRecording

__all__ = ["CleanRecording", "clean_recording", "describe_cleaning", "MAX_LISTED"]

Array = NDArray[np.float64]

MAX_LISTED = 20  # row numbers, gaps and dropped pieces listed in the log (counts are always complete)
QUANTISED_TOLERANCE = 0.05  # |dq / quantum - round(dq / quantum)| below which a velocity is a multiple of the quantum


@dataclass(frozen=True)
class CleanRecording:
    """A cleaned recording: its time-ordered ``segments`` (each a :class:`Dataset` with strictly
    increasing time) and the ``log`` of what cleaning did (plain JSON data, keys in
    :func:`clean_recording`)."""

    segments: list[Dataset]
    log: dict[str, Any]

    @property
    def n_samples(self) -> int:
        """Rows kept, over all segments."""
        return sum(s.n_samples for s in self.segments)


def _rows(indices: Any) -> list[int]:
    return [int(k) for k in list(indices)[:MAX_LISTED]]


def _velocity_log(dq: Array | None) -> dict[str, Any]:
    """Whether ``dq`` was recorded and, per joint, its quantum (smallest non-zero change between
    rows, ``None`` when it never changes) and whether every value is a multiple of it (rpm steps)."""
    if dq is None:
        return {"recorded": False, "quantum": None, "quantised": None}
    quanta: list[float | None] = []
    quantised: list[bool | None] = []
    for column in dq.T:
        change = np.abs(np.diff(column))
        change = change[change > 0]
        if not change.size:
            quanta.append(None)
            quantised.append(None)
            continue
        quantum = float(change.min())
        ratio = column / quantum
        meaningful = quantum >= 1e-9 * max(float(np.abs(column).max()), 1e-300)
        quanta.append(quantum)
        quantised.append(bool(meaningful and np.abs(ratio - np.round(ratio)).max() < QUANTISED_TOLERANCE))
    return {"recorded": True, "quantum": quanta, "quantised": quantised}


def clean_recording(raw: RawRecording, *, max_gap: float = 5.0, min_segment: float = 1.0,
                    drop_repeated_values: bool = True) -> CleanRecording:
    """Drop, split and count what a real log holds that a :class:`Dataset` cannot (module docstring).

    ``max_gap``: a step longer than this many median steps splits the recording (> 1).
    ``min_segment``: pieces shorter than this [s] are dropped (>= 0).
    ``drop_repeated_values``: drop rows repeating the previous row's values (step 3); switch off
    only for noise-free data that may legitimately repeat (a simulation at rest without noise).

    Segment sources are ``"<source> (segment i of n, a-b s)"`` when the recording was split,
    else the input's source. :class:`IdentificationError` when no piece is left, with the counts.

    ``log`` keys: ``source``; ``rows_in``, ``rows_out``; ``columns`` (``dq``, ``ddq`` recorded);
    ``sampling`` (``median_step_s``, ``rate_hz`` = 1 / median step, ``min_step_s``, ``max_step_s``
    over the input's positive steps); ``max_gap`` (factor), ``gap_threshold_s``, ``min_segment_s``;
    ``repeated_stamps`` (``rows_dropped``, ``with_different_values``, ``rows``);
    ``repeated_values`` (``enabled``, ``rows_dropped``, ``longest_run``, ``rows``);
    ``time_backwards`` (``rows_dropped``, ``rows``, ``resets``: list of ``row``, ``t_before``,
    ``t_after``); ``gaps`` (``count``, ``at``: list of ``t`` (last time before), ``length_s``,
    ``rows_dropped_inside``); ``short_segments`` (``count``, ``rows_dropped``, ``durations_s``);
    ``segments`` (list of ``t_start``, ``t_end``, ``duration_s``, ``rows``); ``velocity``
    (``recorded``, ``quantum`` and ``quantised`` per joint).
    """
    if not (math.isfinite(max_gap) and max_gap > 1.0):
        raise ValueError(f"max_gap must be a finite number of median steps above 1, got {max_gap!r}")
    if not (math.isfinite(min_segment) and min_segment >= 0.0):
        raise ValueError(f"min_segment must be a finite duration >= 0 s, got {min_segment!r}")
    source, t, n_in = raw.source, raw.t, raw.n_rows
    arrays = [a for a in (raw.q, raw.tau, raw.dq, raw.ddq) if a is not None]
    values = np.hstack(arrays)

    steps = np.diff(t)
    positive = steps[steps > 0]
    if not positive.size:
        raise IdentificationError(f"{source}: time never increases in its {n_in} rows (t = {float(t[0])!r} s "
                                  f"and earlier): not a recording")
    median = float(np.median(positive))
    threshold = max_gap * median

    # 1-2: time order, row by row (a clock reset starts a new piece)
    keep = np.zeros(n_in, dtype=bool)
    piece = np.zeros(n_in, dtype=int)
    repeated_stamp: list[int] = []
    stamp_differs = 0
    backwards: list[int] = []
    resets: list[dict[str, Any]] = []
    keep[0], last, last_k, current = True, t[0], 0, 0
    if positive.size == steps.size:  # time strictly increases: nothing to decide row by row
        keep[:] = True
    for k in range(1, n_in if positive.size < steps.size else 1):
        tk = t[k]
        if tk > last:
            keep[k], last, last_k = True, tk, k
        elif tk == last:
            repeated_stamp.append(k)
            stamp_differs += int(not np.array_equal(values[k], values[last_k]))
        elif last - tk > threshold:
            current += 1
            resets.append({"row": k, "t_before": float(last), "t_after": float(tk)})
            keep[k], last, last_k = True, tk, k
        else:
            backwards.append(k)
        piece[k] = current

    # 3: stale rows (equal to the previous kept row of the same piece)
    kept = np.flatnonzero(keep)
    same = np.all(values[kept[1:]] == values[kept[:-1]], axis=1) & (piece[kept[1:]] == piece[kept[:-1]])
    stale = kept[1:][same] if drop_repeated_values else np.empty(0, dtype=int)
    longest = 0
    if stale.size:
        position = np.flatnonzero(same)  # runs of consecutive stale rows among the kept ones
        breaks = np.flatnonzero(np.diff(position) != 1)
        longest = int(np.diff(np.concatenate(([0], breaks + 1, [position.size]))).max())
    keep[stale] = False
    kept = np.flatnonzero(keep)

    # 4: gaps split the pieces
    kept_steps = np.diff(t[kept])
    new_piece = piece[kept[1:]] != piece[kept[:-1]]
    gap = (kept_steps > threshold) & ~new_piece
    gaps = [{"t": float(t[kept[i]]), "length_s": float(kept_steps[i]),
             "rows_dropped_inside": int(kept[i + 1] - kept[i] - 1)} for i in np.flatnonzero(gap)]
    cuts = np.flatnonzero(gap | new_piece) + 1
    pieces = np.split(kept, cuts)

    # 5: short pieces dropped
    segments, short = [], []
    for rows in pieces:
        duration = float(t[rows[-1]] - t[rows[0]])
        (segments if rows.size >= 2 and duration >= min_segment else short).append((rows, duration))
    log: dict[str, Any] = {
        "source": source,
        "rows_in": n_in,
        "rows_out": int(sum(rows.size for rows, _ in segments)),
        "columns": {"dq": raw.dq is not None, "ddq": raw.ddq is not None},
        "sampling": {"median_step_s": median, "rate_hz": 1.0 / median, "min_step_s": float(positive.min()),
                     "max_step_s": float(positive.max())},
        "max_gap": float(max_gap),
        "gap_threshold_s": threshold,
        "min_segment_s": float(min_segment),
        "repeated_stamps": {"rows_dropped": len(repeated_stamp), "with_different_values": stamp_differs,
                            "rows": _rows(repeated_stamp)},
        "repeated_values": {"enabled": bool(drop_repeated_values), "rows_dropped": int(stale.size),
                            "longest_run": longest, "rows": _rows(stale)},
        "time_backwards": {"rows_dropped": len(backwards), "rows": _rows(backwards), "resets": resets[:MAX_LISTED],
                           "reset_count": len(resets)},
        "gaps": {"count": len(gaps), "at": gaps[:MAX_LISTED]},
        "short_segments": {"count": len(short), "rows_dropped": int(sum(rows.size for rows, _ in short)),
                           "durations_s": [d for _, d in short[:MAX_LISTED]]},
        "segments": [{"t_start": float(t[rows[0]]), "t_end": float(t[rows[-1]]), "duration_s": d,
                      "rows": int(rows.size)} for rows, d in segments],
        "velocity": _velocity_log(raw.dq),
    }
    dropped = (len(repeated_stamp) + len(backwards) + int(stale.size) + log["short_segments"]["rows_dropped"])
    assert log["rows_out"] + dropped == n_in, "every input row is either kept or counted as dropped"
    if not segments:
        raise IdentificationError(f"{source}: nothing left after cleaning: " + "; ".join(describe_cleaning(log)))
    split = len(pieces) > 1
    out = []
    for i, (rows, _) in enumerate(segments, start=1):
        name = (f"{source} (segment {i} of {len(segments)}, {t[rows[0]]:.1f}-{t[rows[-1]]:.1f} s)" if split
                else source)
        out.append(Dataset(t[rows], raw.q[rows], raw.tau[rows], None if raw.dq is None else raw.dq[rows],
                           None if raw.ddq is None else raw.ddq[rows], source=name))
    return CleanRecording(out, log)


def describe_cleaning(log: dict[str, Any]) -> list[str]:
    """Short human-readable lines for a cleaning ``log`` (what :func:`clean_recording` did)."""
    s = log["sampling"]
    lines = [f"{log['source']}: {log['rows_in']} rows in, {log['rows_out']} kept in {len(log['segments'])} "
             f"segment(s); median step {s['median_step_s'] * 1e3:.3g} ms ({s['rate_hz']:.4g} Hz), "
             f"steps {s['min_step_s'] * 1e3:.3g}-{s['max_step_s'] * 1e3:.3g} ms"]
    drops = [(log["repeated_stamps"]["rows_dropped"], "with a repeated stamp"),
             (log["repeated_values"]["rows_dropped"], "repeating the previous row's values (stale)"),
             (log["time_backwards"]["rows_dropped"], "going back in time")]
    lines += [f"dropped {n} row(s) {what}" for n, what in drops if n]
    if log["time_backwards"]["reset_count"]:
        lines.append(f"split at {log['time_backwards']['reset_count']} clock reset(s)")
    if log["gaps"]["count"]:
        where = ", ".join(f"{g['length_s']:.3g} s at t = {g['t']:.6g} s" for g in log["gaps"]["at"])
        lines.append(f"split at {log['gaps']['count']} gap(s) longer than {log['gap_threshold_s'] * 1e3:.3g} ms: "
                     f"{where}")
    short = log["short_segments"]
    if short["count"]:
        lines.append(f"dropped {short['count']} piece(s) shorter than {log['min_segment_s']:g} s "
                     f"({short['rows_dropped']} rows; " + ", ".join(f"{d:.3g} s" for d in short["durations_s"]) + ")")
    velocity = log["velocity"]
    if velocity["recorded"]:
        quanta = ", ".join("-" if q is None else f"{q:.3g}" for q in velocity["quantum"])
        lines.append(f"dq recorded, quantum per joint [rad/s]: {quanta}")
    else:
        lines.append("dq not recorded")
    return lines
