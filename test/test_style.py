"""The code style holds: flake8 (pycodestyle and pyflakes: unused imports and names, undefined
names, line length, indentation) over the package, the tests, the bench, the launch files and
setup.py, with the settings of setup.cfg ([flake8]: ament's checks at 120 columns; the generated
model is excluded: ``youbot-dynamics`` regenerates it and a test compares it), and pydocstyle (pep257)
with the docstring layout checks of setup.cfg ([pydocstyle])."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("youbot_dynamics", "test", "bench", "launch", "tools", "setup.py")


def test_flake8_finds_nothing():
    pytest.importorskip("flake8")
    result = subprocess.run([sys.executable, "-m", "flake8", *CHECKED], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0 and not result.stdout, f"flake8 (setup.cfg [flake8]):\n{result.stdout}{result.stderr}"


def test_pep257_finds_nothing():
    pytest.importorskip("pydocstyle")
    result = subprocess.run([sys.executable, "-m", "pydocstyle", "--config=setup.cfg", *CHECKED], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and not result.stdout, \
        f"pydocstyle (setup.cfg [pydocstyle]):\n{result.stdout}{result.stderr}"
