#!/usr/bin/env python3
"""README.md and docs/embedding.md as a newcomer meets them (issue #52), checked in CI:

  size        README.md is at most 8 KB.
  rust        every ```rust block of README.md and docs/embedding.md, as shown, is a whole
              program: each page's blocks are built as binaries of one new project whose
              Cargo.toml is the page's ```toml set-up block as shown (only the path to strata
              pointed at this checkout), and each runs twice (a second run must work too).
  quickstart  the ```sh blocks of the README's Quickstart, in order, with no edit, in a fresh
              clone of this repository's HEAD with a target folder of its own (so its first
              block is a first build, timed): `strata view` is started, asked for its page and
              its streams, and stopped with Ctrl-C (SIGINT) as a person stops it.

The Python blocks of both pages run twice in python/tests/test_readme.py (they need the wheel).
With no argument, all three run. Exit 0 when every check holds; otherwise the first failure
is said on stderr and the exit code is 1.
"""

import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
README_MAX_BYTES = 8 * 1024
PAGES = ["README.md", "docs/embedding.md"]
# Each program and each quickstart block gets this long before it is called hung.
RUN_TIMEOUT_S = 600
BUILD_TIMEOUT_S = 1800


def fail(message):
    print(f"readme_check: {message}", file=sys.stderr)
    sys.exit(1)


def blocks(text, lang):
    """The fenced blocks of `text` in language `lang`, in order, as written."""
    return re.findall(rf"^```{lang}\n(.*?)^```$", text, re.S | re.M)


def check_size():
    size = (ROOT / "README.md").stat().st_size
    if size > README_MAX_BYTES:
        fail(f"README.md is {size:,} bytes, more than {README_MAX_BYTES:,}: move reference to docs/")
    print(f"readme_check: README.md is {size:,} bytes (at most {README_MAX_BYTES:,})")


def run(command, cwd, timeout, env=None, what=None):
    done = subprocess.run(command, cwd=cwd, env=env, timeout=timeout,
                          capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{what or command} exited {done.returncode}\n--- stdout\n{done.stdout}\n"
             f"--- stderr\n{done.stderr}")
    return done


def check_rust():
    target = ROOT / "target" / "readme-check"
    for page in PAGES:
        text = (ROOT / page).read_text()
        programs = blocks(text, "rust")
        setups = blocks(text, "toml")
        if not programs:
            fail(f"{page} holds no ```rust block")
        if len(setups) != 1:
            fail(f"{page} holds {len(setups)} ```toml blocks: one set-up a page, its programs' Cargo.toml")
        shown = '{ path = "../strata" }'
        if shown not in setups[0]:
            fail(f"{page}'s set-up does not depend on strata as {shown}")
        name = re.sub(r"[^a-z0-9]+", "-", page.lower()).strip("-")
        project = pathlib.Path(tempfile.mkdtemp(prefix=f"readme-check-{name}-"))
        try:
            manifest = (
                f'[package]\nname = "{name}"\nversion = "0.0.0"\nedition = "2024"\n'
                f"publish = false\n\n"
                + setups[0].replace(shown, '{ path = "%s" }' % ROOT)
                # Not a member of the workspace above it (there is none in a temp folder, but
                # the project must build wherever it is put).
                + "\n[workspace]\n"
            )
            (project / "Cargo.toml").write_text(manifest)
            # strata's own lock file pins what the programs build against.
            shutil.copy(ROOT / "Cargo.lock", project / "Cargo.lock")
            bins = project / "src" / "bin"
            bins.mkdir(parents=True)
            names = []
            for k, program in enumerate(programs, 1):
                if "fn main(" not in program:
                    fail(f"{page}'s ```rust block {k} is not a whole program (no fn main)")
                names.append(f"{name}-example{k}")
                (bins / f"{name}-example{k}.rs").write_text(program)
            env = {**os.environ, "CARGO_TARGET_DIR": str(target)}
            started = time.monotonic()
            run(["cargo", "build", "--quiet", "--bins"], project, BUILD_TIMEOUT_S, env,
                f"building {page}'s {len(programs)} Rust programs")
            print(f"readme_check: {page}: {len(programs)} Rust programs built as shown "
                  f"({time.monotonic() - started:.0f} s)")
            scratch = project / "run"
            scratch.mkdir()
            for k, bin_name in enumerate(names, 1):
                for attempt in (1, 2):
                    run([str(target / "debug" / bin_name)], scratch, RUN_TIMEOUT_S, env,
                        f"{page}'s Rust program {k} (run {attempt})")
            print(f"readme_check: {page}: each ran twice")
        finally:
            shutil.rmtree(project, ignore_errors=True)


def quickstart_blocks():
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Quickstart\n", 1)
    if len(section) != 2:
        fail("README.md has no ## Quickstart section")
    section = section[1].split("\n## ", 1)[0]
    found = blocks(section, "sh")
    if not found:
        fail("the Quickstart holds no ```sh block")
    return found


def serve_and_stop(command, cwd, env):
    """Starts `strata view` as the block says, reads its page and streams, stops it with SIGINT."""
    server = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=cwd, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    try:
        url = None
        deadline = time.monotonic() + BUILD_TIMEOUT_S
        said = []
        while url is None and time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line:
                fail(f"`{command}` ended before it served:\n{''.join(said)}")
            said.append(line)
            match = re.search(r"(http://[0-9.:\[\]]+)/?", line)
            if match and "viewing" in line:
                url = match.group(1)
        if url is None:
            fail(f"`{command}` never said where it serves:\n{''.join(said)}")
        page = urllib.request.urlopen(f"{url}/", timeout=30).read().decode()
        streams = urllib.request.urlopen(f"{url}/api/streams", timeout=30).read().decode()
        if "<html" not in page.lower() or '"capture"' not in streams:
            fail(f"`{command}` served an unexpected page or streams: {streams[:200]}")
        print(f"readme_check: quickstart: `{command}` served {url}/ and stream capture")
    finally:
        os.killpg(server.pid, signal.SIGINT)
        try:
            code = server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            fail(f"`{command}` did not stop on Ctrl-C (SIGINT)")
    if code not in (0, 130, -signal.SIGINT):
        fail(f"`{command}` ended with {code} on Ctrl-C")


def check_quickstart():
    clone = pathlib.Path(tempfile.mkdtemp(prefix="readme-quickstart-"))
    try:
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone / "strata")], check=True)
        cwd = clone / "strata"
        env = {k: v for k, v in os.environ.items() if k != "CARGO_TARGET_DIR"}
        for k, block in enumerate(quickstart_blocks(), 1):
            commands = [line for line in block.splitlines() if line.strip()]
            if len(commands) == 1 and re.search(r"\sview(\s|$)", commands[0]):
                serve_and_stop(commands[0], cwd, env)
                continue
            started = time.monotonic()
            done = run(["bash", "-euo", "pipefail", "-c", block], cwd, BUILD_TIMEOUT_S, env,
                       f"the Quickstart's block {k}")
            took = time.monotonic() - started
            print(f"readme_check: quickstart block {k} ran ({took:.0f} s)")
            print("\n".join("    " + line for line in done.stdout.splitlines()[-6:]))
        # What the last block wrote, read back by the reader it names.
        out = (cwd / "out.csv").read_text().splitlines()
        if len(out) != 7 or not out[0].startswith("position,"):
            fail(f"out.csv holds {len(out)} lines, not a header and 6 rows: {out[:3]}")
    finally:
        shutil.rmtree(clone, ignore_errors=True)


def main():
    wanted = sys.argv[1:] or ["size", "rust", "quickstart"]
    checks = {"size": check_size, "rust": check_rust, "quickstart": check_quickstart}
    for name in wanted:
        if name not in checks:
            fail(f"no check {name!r}: one of {', '.join(checks)}")
        checks[name]()


if __name__ == "__main__":
    main()
