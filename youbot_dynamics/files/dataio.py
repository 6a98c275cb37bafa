"""Reading and writing the CSV files of the command-line tool (header row, one sample per row).

Files are UTF-8 (a leading byte-order mark is accepted); binary data are refused naming the file.
Writing is atomic (:func:`~youbot_dynamics.files.fileio.atomic_writer`).
"""
from __future__ import annotations

import csv
import math
import warnings
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from .fileio import TEXT_ENCODING, atomic_writer

__all__ = ["DataFileError", "read_csv_header", "read_csv_columns", "csv_row_line", "write_csv"]


class DataFileError(ValueError):
    """A data file is missing, malformed, lacks a column or holds a non-finite value."""


def read_csv_header(path: str | Path) -> list[str]:
    """The column names of a CSV file (its first row, stripped); :class:`DataFileError` if unreadable or empty."""
    path = Path(path)
    try:
        with path.open(newline="", encoding=TEXT_ENCODING) as handle:
            header = next(csv.reader(handle), None)
    except OSError as exc:
        raise DataFileError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise _not_text(path, exc) from None
    if header is None:
        raise DataFileError(f"{path}: empty file (expected a header row)")
    return [h.strip() for h in header]


def _not_text(path: Path, exc: UnicodeDecodeError) -> DataFileError:
    return DataFileError(f"{path}: not a UTF-8 text CSV file (undecodable byte 0x{exc.object[exc.start]:02x})")


def _clean_columns(path: Path, index: Sequence[int]) -> NDArray[np.float64] | None:
    """The columns ``index`` by numpy's C parser (fast) if the file is clean: every row complete,
    numeric and finite. ``None`` otherwise; the row-by-row reader then names the problem."""
    try:
        with warnings.catch_warnings():  # a header-only file: the row-by-row reader says so in one line
            warnings.filterwarnings("ignore", "loadtxt: input contained no data", UserWarning)
            data = np.loadtxt(path, delimiter=",", skiprows=1, usecols=index, ndmin=2, dtype=float, comments=None,
                              encoding=TEXT_ENCODING)
    except (ValueError, IndexError):
        return None
    return data if data.shape[0] and np.isfinite(data).all() else None


def read_csv_columns(path: str | Path, columns: Sequence[str]) -> NDArray[np.float64]:
    """The named columns of a CSV file with a header row, as an (N, len(columns)) float array.

    Extra columns are ignored. A missing file or column, a short row, a non-number or a
    non-finite value is a :class:`DataFileError` naming the file, row and column.
    """
    path = Path(path)
    try:
        handle = path.open(newline="", encoding=TEXT_ENCODING)
    except OSError as exc:
        raise DataFileError(f"cannot read {path}: {exc.strerror}") from None
    try:
        with handle:
            return _read_columns(path, handle, columns)
    except UnicodeDecodeError as exc:
        raise _not_text(path, exc) from None


def _read_columns(path: Path, handle: Any, columns: Sequence[str]) -> NDArray[np.float64]:
    """:func:`read_csv_columns` on an open ``handle``."""
    reader = csv.reader(handle)
    header = next(reader, None)
    if header is None:
        raise DataFileError(f"{path}: empty file (expected a header row with {', '.join(columns)})")
    header = [h.strip() for h in header]
    missing = [c for c in columns if c not in header]
    if missing:
        raise DataFileError(f"{path}: missing column(s) {', '.join(missing)} (header: {', '.join(header)})")
    index = [header.index(c) for c in columns]
    fast = _clean_columns(path, index)
    if fast is not None:
        return fast
    rows = []
    for line_no, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        values = []
        for name, i in zip(columns, index):
            cell = row[i].strip() if i < len(row) else ""
            try:
                value = float(cell)
            except ValueError:
                raise DataFileError(f"{path}:{line_no}: column {name}: not a number: {cell!r}") from None
            if not math.isfinite(value):
                raise DataFileError(f"{path}:{line_no}: column {name}: non-finite value {cell!r}")
            values.append(value)
        rows.append(values)
    if not rows:
        raise DataFileError(f"{path}: no data rows")
    return np.asarray(rows, dtype=float)


def csv_row_line(path: str | Path, row: int) -> int:
    """The line number (1-based) in the file of data row ``row`` (0-based, in the order of
    :func:`read_csv_columns`: after the header, blank rows skipped), for messages about a row."""
    with Path(path).open(newline="", encoding=TEXT_ENCODING) as handle:
        reader = csv.reader(handle)
        next(reader, None)
        k = -1
        for cells in reader:
            if cells and any(cell.strip() for cell in cells):
                k += 1
                if k == row:
                    return reader.line_num
    raise ValueError(f"{path}: no data row {row}")


def write_csv(path: str | Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """Write a CSV file atomically; floats are written with full (repr) precision."""
    with atomic_writer(path, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in rows:
            writer.writerow([repr(float(v)) if isinstance(v, (float, np.floating)) else v for v in row])
