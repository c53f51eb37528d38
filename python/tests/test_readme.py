"""The README's Python example, run as it is written (as the Rust examples are doc-tests), so
the page a newcomer reads cannot drift from the module."""

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_readme_python_example_runs_and_draws_its_survey(tmp_path):
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## From Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the section holds one Python example"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    picture = tmp_path / "survey.png"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "capture-store" / "LOCK").exists(), "the store is where the example made it"


def test_the_package_docstring_example_runs():
    import doctest

    import strata

    failed, attempted = doctest.testmod(strata)
    assert attempted >= 3 and failed == 0
