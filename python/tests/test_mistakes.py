"""One mistake, one refusal (#47 item 7), Python's column of the table: each mistake in naming
what to read is refused by the module with the engine's own words, which the command line says
too (cli/tests/it/mistakes_cli.rs holds the Rust API and `strata view` to the same words), and
is never answered empty. The store is made by the command line, so the two faces read one
store."""

import subprocess

import pytest

import strata

DECLARE = ["--field", "run:str", "--field", "probe:str", "--field", "t:u64", "--field", "value:f64",
           "--track", "run,probe", "--axis", "t"]


def strata_cli(strata_bin, store, *args, stdin=None):
    """`strata --store STORE ARGS`: exit code and stderr."""
    done = subprocess.run([strata_bin, "--store", str(store), *args], input=stdin,
                          capture_output=True, text=True)
    return done.returncode, done.stderr


@pytest.fixture
def store(path, strata_bin):
    """`capture` (tracks r1,p0 and r1,p5; r1,p0 retired) and `gone` (every track retired)."""
    def ok(*args, stdin=None):
        code, stderr = strata_cli(strata_bin, path, *args, stdin=stdin)
        assert code == 0, stderr
    ok("declare", "capture", *DECLARE)
    rows = "".join(f"r1,p0,{i * 10},1.5\nr1,p5,{i * 10},2.5\n" for i in range(100))
    ok("ingest", "capture", "-", stdin="run,probe,t,value\n" + rows)
    ok("retire", "capture", "--track", "r1,p0")
    ok("declare", "gone", *DECLARE)
    ok("ingest", "gone", "-", stdin="run,probe,t,value\nr1,p0,5,1.0\n")
    ok("retire", "gone", "--all")
    return path


# name, the module's call, the same mistake on the command line, the exception's kind
MISTAKES = [
    ("unknown track", lambda s: s.survey("capture", "r9", budget=64),
     ["survey", "capture", "--track", "r9", "--budget", "64"], strata.SelectionError),
    ("retired track", lambda s: s.survey("capture", ("r1", "p0"), budget=64),
     ["survey", "capture", "--track", "r1,p0", "--budget", "64"], strata.FloorError),
    ("track of the wrong depth", lambda s: s.survey("capture", ("r1", "p5", "x"), budget=64),
     ["survey", "capture", "--track", "r1,p5,x", "--budget", "64"], strata.SelectionError),
    ("unknown stream", lambda s: s.survey("captur", budget=64),
     ["survey", "captur", "--budget", "64"], strata.SelectionError),
    ("inverted range", lambda s: s.survey("capture", start=9, end=3, budget=64),
     ["survey", "capture", "--from", "9", "--to", "3", "--budget", "64"], strata.SelectionError),
    ("selection with nothing live", lambda s: s.survey("gone", budget=64),
     ["survey", "gone", "--budget", "64"], strata.FloorError),
    ("retire with no track", lambda s: s.retire("capture"),
     ["retire", "capture", "--track", ""], strata.SelectionError),
]


@pytest.mark.parametrize("name,call,cli,kind", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_a_mistake_is_refused_in_the_words_the_command_line_says(store, strata_bin, name, call,
                                                                  cli, kind):
    code, stderr = strata_cli(strata_bin, store, *cli)
    assert code != 0, f"{name}: the command line answered it"
    said = stderr.removeprefix("strata: ").rstrip("\n")
    with strata.Store.open(str(store)) as opened:
        with pytest.raises(kind) as refused:
            call(opened)
    # The command line adds a hint of its own text's syntax to a selection too deep; the
    # engine's words come first, alike.
    assert said.startswith(str(refused.value)), f"{name}:\n{said}\n{refused.value}"


def test_retire_all_asks_for_every_track_by_name(store):
    with strata.Store.open(str(store)) as opened:
        with pytest.raises(ValueError, match="not both"):
            opened.retire("capture", "r1", all=True)
        assert opened.retire("capture", all=True) > 0
        with pytest.raises(strata.SelectionError, match="live to retire"):
            opened.retire("capture", all=True)


def test_a_watermark_is_the_streams_whatever_the_track(store):
    with strata.Store.open(str(store)) as opened:
        mark = opened.watermark("capture")
        assert mark is not None
        assert opened.watermark("capture", ("r1", "p5")) == mark
        with pytest.raises(strata.SelectionError, match="names 3 labels"):
            opened.watermark("capture", ("r1", "p5", "x"))
