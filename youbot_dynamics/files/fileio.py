"""Safe file input and output, shared by every reader and writer of the package.

Output (:func:`atomic_writer`, :func:`atomic_write_text`): a file is written to a temporary file
in its own folder (``.NAME.XXXX.tmp``), flushed to disk (``fsync``) and renamed over ``NAME``
(``os.replace``, atomic on POSIX), so a reader never sees a half-written file and a failure
(full disk, no permission) leaves the previous file, if any, untouched and no temporary behind.
Inside :func:`output_group` the renames wait until the group ends without an exception: the
outputs of one command (model file, report, plots) appear all together or not at all.
:func:`check_output` refuses, before any work, an output that is the same file as an input or
lies in a folder that cannot be written. Write errors are :class:`OutputFileError` naming the file.

Input (:func:`read_text`, :func:`load_yaml`): UTF-8 text, a leading byte-order mark accepted;
undecodable bytes, a missing file or malformed YAML are an error of the caller's class naming the
file (malformed YAML in one line, ``FILE:LINE:COLUMN: malformed YAML: ...``: :func:`yaml_error_text`).
:func:`yaml_number` is the one reader of a YAML number: an int or float, finite, never a boolean
(``mass: true`` is not 1 kg).
"""
from __future__ import annotations

import contextlib
import math
import os
import tempfile
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

import yaml

__all__ = ["OutputFileError", "atomic_writer", "atomic_write_text", "output_group", "check_output", "read_text",
           "load_yaml", "yaml_error_text", "yaml_number"]

TEXT_ENCODING = "utf-8-sig"  # reads UTF-8 with or without a byte-order mark


class OutputFileError(ValueError):
    """An output file cannot be written, or would overwrite an input (the file is named)."""


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()  # read once at import: setting it later would race with other threads

# pending renames (temporary, target) of the innermost output_group, None outside any group
_GROUP: ContextVar[list[tuple[Path, Path]] | None] = ContextVar("youbot_dynamics_output_group", default=None)


def _discard(temporary: Path) -> None:
    with contextlib.suppress(OSError):
        temporary.unlink()


def _write_error(path: Path, exc: OSError) -> OutputFileError:
    return OutputFileError(f"cannot write {path}: {exc.strerror or exc} (nothing written)")


@contextlib.contextmanager
def atomic_writer(path: str | Path, binary: bool = False, newline: str | None = None) -> Iterator[IO[Any]]:
    """A handle on a temporary file that replaces ``path`` when the block ends without an
    exception (at the end of the enclosing :func:`output_group`, if any); module docstring."""
    path = Path(path)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _write_error(path, exc) from None
    temporary = Path(name)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600; the file gets the usual permissions
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline=newline)) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        group = _GROUP.get()
        if group is None:
            os.replace(temporary, path)
        else:
            group.append((temporary, path))
    except OSError as exc:
        _discard(temporary)
        raise _write_error(path, exc) from None
    except BaseException:
        _discard(temporary)
        raise


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` through :func:`atomic_writer`; returns the path."""
    with atomic_writer(path) as handle:
        handle.write(text)
    return Path(path)


@contextlib.contextmanager
def output_group() -> Iterator[None]:
    """Every :func:`atomic_writer` inside the block is renamed into place only when the block
    ends without an exception; otherwise all their temporaries are removed and no output changes."""
    pending: list[tuple[Path, Path]] = []
    token = _GROUP.set(pending)
    try:
        yield
    except BaseException:
        for temporary, _ in pending:
            _discard(temporary)
        raise
    finally:
        _GROUP.reset(token)
    for k, (temporary, path) in enumerate(pending):
        try:
            os.replace(temporary, path)
        except OSError as exc:
            for later, _ in pending[k:]:
                _discard(later)
            raise _write_error(path, exc) from None


def _same_or_inside(output: Path, source: Path) -> bool:
    """True if ``output`` is the file ``source`` or lies inside the folder ``source``."""
    if output.exists() and source.exists() and os.path.samefile(output, source):
        return True
    out, src = os.path.realpath(output), os.path.realpath(source)
    return out == src or (source.is_dir() and out.startswith(src.rstrip(os.sep) + os.sep))


def check_output(path: str | Path, inputs: Iterable[str | Path] = (), label: str = "output",
                 folder: bool = False) -> Path:
    """``path`` as a :class:`Path` if it can be written without touching an input: not one of
    ``inputs`` (nor inside an input folder), not a folder, and in a folder where a file can be
    created (tried); with ``folder``, an output folder (created later): not an input, and the folder
    or its nearest existing parent a folder where a file can be created (tried).
    :class:`OutputFileError` naming ``label`` and the file otherwise."""
    path = Path(path)
    for source in inputs:
        if _same_or_inside(path, Path(source)):
            raise OutputFileError(f"{path}: the {label} is the input {source}: refusing to overwrite an input")
    if folder:
        if path.exists() and not path.is_dir():
            raise OutputFileError(f"{path}: the {label} is a file, expected a folder")
        # the folder or, if it is still to be created, its nearest existing parent must take a file
        where = next(p for p in (path, *path.absolute().parents) if p.exists())
        if not where.is_dir():
            raise OutputFileError(f"cannot create the {label} {path}: {where} is a file, not a folder")
        directory = where
    elif path.is_dir():
        raise OutputFileError(f"{path}: the {label} is a folder, expected a file name")
    else:
        directory = path.parent
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise OutputFileError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(name)
    return path


def read_text(path: str | Path, error: type[Exception], what: str = "file") -> str:
    """The UTF-8 text of ``path`` (a leading byte-order mark dropped); ``error`` naming the file
    when it cannot be read or is not UTF-8 text (binary data)."""
    path = Path(path)
    try:
        return path.read_text(encoding=TEXT_ENCODING)
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not a UTF-8 text {what} (byte 0x{exc.object[exc.start]:02x} at offset "
                    f"{exc.start})") from None
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def yaml_error_text(path: str | Path, exc: yaml.YAMLError) -> str:
    """PyYAML's multi-line error as one line naming the file, line and column (1-based) of the
    problem, e.g. ``m.yaml:1:5: malformed YAML: expected ',' or ']', but got '<stream end>' (while
    parsing a flow sequence that starts at line 1, column 1)``."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else f"{path}"
    problem = getattr(exc, "problem", None)
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if problem is None:  # not a MarkedYAMLError: its text, on one line
        return f"{where}: malformed YAML: {' '.join(str(exc).split())}"
    text = " ".join(str(problem).split())
    if context:
        text += f" ({' '.join(str(context).split())}"
        if context_mark is not None and (mark is None or (context_mark.line, context_mark.column)
                                         != (mark.line, mark.column)):
            text += f" that starts at line {context_mark.line + 1}, column {context_mark.column + 1}"
        text += ")"
    return f"{where}: malformed YAML: {text}"


def load_yaml(path: str | Path, error: type[Exception], what: str = "file") -> Any:
    """The parsed YAML document of ``path`` (:func:`read_text`); ``error`` naming the file when
    unreadable or malformed (one line with the line and column: :func:`yaml_error_text`)."""
    text = read_text(path, error, what)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(yaml_error_text(path, exc)) from None


def yaml_number(raw: Any, finite: bool = True) -> float:
    """``raw`` (a parsed YAML value) as a float if it is an int or float (and finite, if
    ``finite``); ``ValueError`` with the reason otherwise: a boolean (``true`` is not 1), a string
    (PyYAML reads ``1e-3`` without a dot as one: write ``1.0e-3``), null, a list, NaN or infinity."""
    expected = "a finite number" if finite else "a number"
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        hint = ""
        if isinstance(raw, str):
            with contextlib.suppress(ValueError):
                float(raw)
                hint = " (a YAML string: write exponents with a dot, e.g. 1.0e-3)"
        raise ValueError(f"expected {expected}, got {raw!r}{hint}")
    if finite and not math.isfinite(raw):
        raise ValueError(f"expected {expected}, got {raw!r}")
    return float(raw)
