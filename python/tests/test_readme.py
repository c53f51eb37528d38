"""The Python examples of README.md and docs/embedding.md, run as they are written and twice (a
newcomer runs an example again), so the pages a newcomer reads cannot drift from the module.
scripts/readme_check.py does the same for their Rust programs."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = ["README.md", "docs/embedding.md"]


def python_blocks():
    found = []
    for page in PAGES:
        text = (ROOT / page).read_text()
        for k, block in enumerate(re.findall(r"^```python\n(.*?)^```$", text, re.S | re.M), 1):
            found.append(pytest.param(block, id=f"{page}#{k}"))
    return found


def test_the_readme_shows_a_python_example():
    assert any("README.md" in p.id for p in python_blocks())


@pytest.mark.parametrize("block", python_blocks())
def test_each_python_example_runs_as_written_twice(block, tmp_path):
    env = {**os.environ, "MPLBACKEND": "Agg"}
    for attempt in (1, 2):
        done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0, f"run {attempt}: {done.stderr}"
        assert done.stdout.strip(), f"run {attempt} printed nothing"
    assert (tmp_path / "capture-store" / "LOCK").exists(), "the store is where the example made it"


def test_the_package_docstring_example_runs():
    import doctest

    import strata

    failed, attempted = doctest.testmod(strata)
    assert attempted >= 3 and failed == 0
