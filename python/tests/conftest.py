"""Fixtures of strata's Python tests: a fresh store folder, and the `strata` command line the
interoperability tests drive (built by cargo if it is not built yet)."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def path(tmp_path):
    """A folder for a new store (missing: `Store.create` makes it)."""
    return tmp_path / "store"


@pytest.fixture(scope="session")
def strata_bin():
    """The `strata` binary: $STRATA_BIN, else the workspace's debug build, built if missing."""
    given = os.environ.get("STRATA_BIN")
    if given:
        return given
    binary = ROOT / "target" / "debug" / "strata"
    if not binary.exists():
        subprocess.run(
            ["cargo", "build", "--quiet", "-p", "strata-cli", "--bin", "strata"],
            cwd=ROOT,
            check=True,
        )
    return str(binary)
