"""strata's Python face against numpy, pyarrow, pandas, Polars and the `strata` command line.

Expected values come from numpy over the same arrays the store was given (or from the command
line reading the same folder), never from the module under test.
"""

import csv
import io
import json
import pathlib
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strata

KINDS = {"label": "str", "t": "u64", "u": "u64", "i": "i64", "f": "f64", "s": "str", "b": "bytes"}
EVERY_KIND = {
    "name": "every",
    "fields": KINDS,
    "track": ["label"],
    "axis": "t",
}
PROBES = {
    "name": "probes",
    "fields": [("run", "str"), ("probe", "u64"), ("t", "u64"), ("v", "f64"), ("n", "i64")],
    "track": ["run", "probe"],
    "axis": "t",
}
SLOW = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def batch(draw_rows):
    """Columns of `every` for rows drawn as tuples (t, u, i, f, s, b), axis sorted."""
    rows = sorted(draw_rows, key=lambda r: r[0])
    return {
        "t": np.array([r[0] for r in rows], dtype=np.uint64),
        "u": np.array([r[1] for r in rows], dtype=np.uint64),
        "i": np.array([r[2] for r in rows], dtype=np.int64),
        "f": np.array([r[3] for r in rows], dtype=np.float64),
        "s": [r[4] for r in rows],
        "b": [r[5] for r in rows],
    }


ROW = st.tuples(
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**64 - 1),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.binary(max_size=12),
)


def assert_rows(table_or_dict, columns, positions):
    get = (lambda k: table_or_dict[k]) if isinstance(table_or_dict, dict) else (
        lambda k: table_or_dict.column(k).to_pylist()
    )
    assert list(get("position")) == positions
    for name in ("t", "u", "i"):
        assert [int(x) for x in get(name)] == [int(x) for x in columns[name]], name
    assert [float(x) for x in get("f")] == [float(x) for x in columns["f"]]
    assert list(get("s")) == list(columns["s"])
    assert [bytes(x) for x in get("b")] == [bytes(x) for x in columns["b"]]


@SLOW
@given(batches=st.lists(st.lists(ROW, min_size=1, max_size=30), min_size=1, max_size=4))
def test_every_field_kind_round_trips_through_a_seal_and_a_reopen(tmp_path_factory, batches):
    path = tmp_path_factory.mktemp("every") / "store"
    positions, expected = [], {k: [] for k in ("t", "u", "i", "f", "s", "b")}
    with strata.Store.create(path, [EVERY_KIND]) as store:
        last_axis = 0
        for position, rows in enumerate(batches, start=1):
            # The axis is monotone within a partition: each batch starts where the last ended.
            rows = [(max(r[0], last_axis),) + r[1:] for r in rows]
            columns = batch(rows)
            last_axis = int(columns["t"][-1])
            store.publish("every", position, "L", columns)
            positions += [position] * len(rows)
            for k in expected:
                expected[k] += list(columns[k])
        assert store.seal() == {"every": len(batches)}
        assert_rows(store.query("every"), expected, positions)
    with strata.Store.open_read_only(path) as reader:
        assert_rows(reader.query("every", "L"), expected, positions)
        assert_rows(reader.query_numpy("every", ["L"]), expected, positions)
        numbers = reader.query_numpy("every")
        assert numbers["u"].dtype == np.uint64 and numbers["i"].dtype == np.int64
        assert numbers["f"].dtype == np.float64


def probes_store(path, rng, sizes):
    """`probes` with a track per (run, probe) in `sizes`, each one batch; returns the arrays."""
    store = strata.Store.create(path, [PROBES])
    arrays = {}
    for position, ((run, probe), n) in enumerate(sorted(sizes.items()), start=1):
        t = np.sort(rng.integers(0, 10_000, n)).astype(np.uint64)
        v = rng.normal(0, 100, n).round(3)
        k = rng.integers(-1000, 1000, n)
        store.publish("probes", position, (run, probe), {"t": t, "v": v, "n": k})
        arrays[(run, probe)] = (position, t, v, k)
    store.seal()
    return store, arrays


def test_track_prefixes_select_their_partitions_in_publish_order(path):
    rng = np.random.default_rng(7)
    sizes = {("a", 1): 50, ("a", 2): 70, ("b", 1): 30}
    store, arrays = probes_store(path, rng, sizes)
    for prefix in [(), ("a",), ("a", 2), ("b",), ("b", 1)]:
        chosen = [key for key in sorted(arrays) if key[: len(prefix)] == prefix]
        table = store.query("probes", list(prefix))
        assert table.column("position").to_pylist() == [
            arrays[k][0] for k in chosen for _ in range(len(arrays[k][1]))
        ]
        assert table.column("v").to_pylist() == [x for k in chosen for x in arrays[k][2]]
        assert table.column("run").to_pylist() == [k[0] for k in chosen for _ in arrays[k][1]]
        assert table.column("probe").to_pylist() == [k[1] for k in chosen for _ in arrays[k][1]]
        v = np.concatenate([arrays[k][2] for k in chosen])
        assert store.fold("probes", list(prefix), agg="max")["v"] == v.max()
        assert store.fold("probes", list(prefix), agg="count")["n"] == len(v)
    # A track never sealed is refused, naming the tracks there are: never an empty answer.
    with pytest.raises(strata.SelectionError, match=r"its tracks: a,1, a,2, b,1"):
        store.query("probes", ("a", 3))
    assert store.watermark("probes", "b") == 3


@pytest.mark.parametrize("budget", [8, 9, 40, 400, 4000, 100_000])
def test_a_survey_keeps_to_its_budget_and_folds_every_row(path, budget):
    rng = np.random.default_rng(budget)
    store, arrays = probes_store(path, rng, {("a", 1): 5000})
    _, t, v, k = arrays[("a", 1)]
    survey = store.survey("probes", ("a", 1), budget=budget)
    # 4 points a bucket, for each of the two measured fields.
    assert 4 * 2 * len(survey) <= budget
    with pytest.raises(strata.StrataError, match="budget of 7 points is below the minimum of 8"):
        store.survey("probes", budget=7)
    assert set(survey.fields) == {"v", "n"}
    cells = survey["v"]
    assert cells["count"].sum() == len(v)
    assert cells["max"].max() == v.max() and cells["min"].min() == v.min()
    assert cells["sum"].sum() == pytest.approx(v.sum())
    assert survey["n"]["max"].dtype == np.int64 and survey["n"]["max"].max() == k.max()
    # Every extreme is where it says it is, and buckets run in axis order.
    for i in range(len(survey)):
        assert cells["max"][i] in v[t == cells["max_axis"][i]]
        assert cells["min"][i] in v[t == cells["min_axis"][i]]
        assert cells["first_axis"][i] <= cells["last_axis"][i]
    assert np.all(np.diff(cells["first_axis"]) > 0)
    assert cells["first"][0] == v[0] and cells["last"][-1] == v[-1]
    assert survey.span == (int(t[0]), int(t[-1]))


def nearest_rank(values, p):
    """The nearest-rank percentile: the value of 1-based rank max(1, ceil(p * n / 100)),
    in integers (a float product can land just past a whole rank)."""
    ordered = np.sort(values)
    return ordered[max((p * len(ordered) + 99) // 100, 1) - 1]


@SLOW
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 3000),
    lo=st.integers(0, 12_000),
    width=st.integers(0, 12_000),
)
def test_folds_equal_numpy_over_the_same_arrays(tmp_path_factory, seed, n, lo, width):
    rng = np.random.default_rng(seed)
    store, arrays = probes_store(tmp_path_factory.mktemp("fold") / "s", rng, {("a", 1): n})
    _, t, v, k = arrays[("a", 1)]
    hi = lo + width
    inside = (t >= lo) & (t <= hi)
    for agg in ["min", "max", "mean", "sum", "count", "p0", "p50", "p99", "p100"]:
        got = store.fold("probes", "a", lo, hi, agg=agg)
        if not inside.any():
            assert got == ({"v": 0, "n": 0} if agg == "count" else {"v": None, "n": None}), agg
            continue
        for name, values in (("v", v[inside]), ("n", k[inside])):
            want = {
                "min": values.min(),
                "max": values.max(),
                "mean": values.mean(),
                "sum": values.sum(dtype=np.float64),
                "count": len(values),
            }.get(agg)
            if agg.startswith("p"):
                want = nearest_rank(values, int(agg[1:]))
            assert got[name] == pytest.approx(want, rel=1e-9, abs=1e-9), (agg, name)
    store.close()


def test_a_trim_sets_a_floor_reads_beneath_it_raise_floor_error(path):
    with strata.Store.create(path, [PROBES]) as store:
        for position in range(1, 11):
            t = np.arange(position * 10, position * 10 + 10, dtype=np.uint64)
            store.publish("probes", position, ("a", 1), {"t": t, "v": t * 0.5, "n": -t.astype(np.int64)})
            store.seal()
        assert store.trim_to("probes", 5) == 1
        with pytest.raises(strata.FloorError, match="beneath position 6"):
            store.query("probes")
        with pytest.raises(strata.FloorError):
            store.query("probes", start=3)
        kept = store.query("probes", start=6)
        assert kept.column("position").to_pylist() == [p for p in range(6, 11) for _ in range(10)]
        with pytest.raises(strata.FloorError, match="axis value 60"):
            store.fold("probes", agg="p50")
        assert store.fold("probes", start=60, agg="p0")["v"] == 30.0
        # Levels outlive the raw rows: a max over the whole axis still answers.
        assert store.fold("probes", agg="max")["v"] == 54.5
    assert issubclass(strata.FloorError, strata.StrataError)


def test_refusals_are_exceptions_that_name_the_fault_and_keep_nothing(path):
    store = strata.Store.create(path, [PROBES])
    good = {"t": np.arange(3, dtype=np.uint64), "v": np.ones(3), "n": np.arange(3)}
    with pytest.raises(strata.RefusedError, match=r"row 3 of the batch .*axis \"t\" goes backwards in its partition: 0 after 2"):
        store.publish("probes", 1, ("a", 1), {**good, "t": np.array([1, 2, 0], dtype=np.uint64)})
    with pytest.raises(ValueError, match=r"field \"t\" \(u64\): row 2 is missing \(null\), and it is the axis"):
        store.publish("probes", 1, ("a", 1), {**good, "t": pa.array([0, None, 2], pa.uint64())})
    with pytest.raises(ValueError, match=r"field \"t\" \(u64\): row 2 holds -1"):
        store.publish("probes", 1, ("a", 1), {**good, "t": np.array([0, -1, 2])})
    with pytest.raises(ValueError, match=r"no column for field \"n\""):
        store.publish("probes", 1, ("a", 1), {"t": good["t"], "v": good["v"]})
    with pytest.raises(ValueError, match=r"has no field \"w\""):
        store.publish("probes", 1, ("a", 1), {**good, "w": good["v"]})
    with pytest.raises(ValueError, match=r"field \"run\" is the track's"):
        store.publish("probes", 1, ("a", 1), {**good, "run": ["a"] * 3})
    with pytest.raises(ValueError, match=r"field \"v\" \(f64\): a column of dtype <U1"):
        store.publish("probes", 1, ("a", 1), {**good, "v": np.array(["x", "y", "z"])})
    with pytest.raises(ValueError, match=r"field \"n\" \(i64\): row 3 holds 18446744073709551615"):
        store.publish("probes", 1, ("a", 1), {**good, "n": np.array([0, 1, 2**64 - 1], dtype=np.uint64)})
    with pytest.raises(ValueError, match=r"field \"t\" \(u64\): a column of dtype bool"):
        store.publish("probes", 1, ("a", 1), {**good, "t": np.array([True, False, True])})
    with pytest.raises(TypeError, match="not bytes"):
        store.publish("probes", 1, b"a", good)
    with pytest.raises(strata.RefusedError):
        store.publish("probes", 1, ("a", 1), {**good, "v": np.ones(2)})
    with pytest.raises(strata.RefusedError, match="track"):
        store.publish("probes", 1, ("a", 1, "extra"), good)
    with pytest.raises(strata.StrataError, match="nope"):
        store.publish("nope", 1, ("a", 1), good)
    with pytest.raises(ValueError, match="unknown aggregate \"median\""):
        store.fold("probes", agg="median")
    # Nothing of a refused batch was kept, and the store takes the next one.
    assert store.seal() == {"probes": None}
    store.publish("probes", 1, ("a", 1), good)
    assert store.seal() == {"probes": 1}
    with pytest.raises(strata.RefusedError, match="goes backwards"):
        store.publish("probes", 2, ("a", 1), {**good, "t": np.array([0, 0, 0], dtype=np.uint64)})
    assert store.query("probes").num_rows == 3
    store.close()
    with pytest.raises(strata.StrataError, match="closed"):
        store.query("probes")
    with pytest.raises(strata.RefusedError, match="unknown kind \"float\""):
        strata.Store.create(path.parent / "other", [{"name": "x", "fields": {"a": "float"}}])
    with pytest.raises(strata.StrataError, match="not a strata store: .*missing does not exist"):
        strata.Store.open(path.parent / "missing")
    with strata.Store.open_read_only(path) as reader:
        with pytest.raises(strata.StrataError, match="read"):
            reader.publish("probes", 2, ("a", 1), good)


def test_str_and_bytes_columns_refuse_nulls_and_other_objects_by_row(path):
    with strata.Store.create(path, [EVERY_KIND]) as store:
        good = {
            "t": np.arange(3, dtype=np.uint64), "u": np.arange(3, dtype=np.uint64),
            "i": np.arange(3), "f": np.zeros(3), "s": ["a", "b", "c"], "b": [b"", b"x", b"\x00"],
        }
        with pytest.raises(ValueError, match=r"field \"s\" \(str\): row 2 is missing \(null\), and it is a str"):
            store.publish("every", 1, "L", {**good, "s": pa.array(["a", None, "c"])})
        with pytest.raises(ValueError, match=r"field \"s\" \(str\): row 3 is a int, not str"):
            store.publish("every", 1, "L", {**good, "s": ["a", "b", 3]})
        with pytest.raises(ValueError, match=r"field \"b\" \(bytes\): an Arrow column of type Utf8 is not bytes"):
            store.publish("every", 1, "L", {**good, "b": pa.array(["a", "b", "c"])})
        with pytest.raises(ValueError, match=r"field \"b\" \(bytes\): row 1 is a str, not bytes"):
            store.publish("every", 1, "L", {**good, "b": ["a", "b", "c"]})
        store.publish("every", 1, "L", {**good, "s": pa.chunked_array([["a"], ["b", "c"]])})
        assert store.seal() == {"every": 1}
        assert store.query("every").column("s").to_pylist() == ["a", "b", "c"]


def test_staging_stops_at_the_configured_bound(path):
    store = strata.Store.create(path, [PROBES], config={"staged_bytes_max": 64 << 10})
    n = 10_000
    columns = {"t": np.arange(n, dtype=np.uint64), "v": np.ones(n), "n": np.arange(n)}
    with pytest.raises(strata.RefusedError, match="[Ss]taging"):
        store.publish("probes", 1, ("a", 1), columns)
    small = {k: v[:100] for k, v in columns.items()}
    store.publish("probes", 1, ("a", 1), small)
    assert store.seal() == {"probes": 1}
    with pytest.raises(ValueError, match="no key \"stage_max\""):
        strata.Store.open(path, config={"stage_max": 1})


def test_flipped_bytes_on_disk_raise_unreadable_error(path):
    with strata.Store.create(path, [PROBES]) as store:
        t = np.arange(20_000, dtype=np.uint64)
        store.publish("probes", 1, ("a", 1), {"t": t, "v": np.sin(t / 100.0), "n": np.arange(20_000)})
        store.seal()
    segment = sorted((path / "seg").iterdir())[-1]
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0x10
    segment.write_bytes(bytes(data))
    with pytest.raises(strata.UnreadableError, match="seg"):
        with strata.Store.open_read_only(path) as reader:
            reader.query("probes")
    assert issubclass(strata.UnreadableError, strata.StrataError)


def test_pandas_polars_and_pyarrow_columns_go_in_and_come_out(path):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    frame = pd.DataFrame({"t": np.arange(100, dtype=np.uint64), "f": np.linspace(-1, 1, 100)})
    labels = pa.array([f"row {i}" for i in range(100)])
    with strata.Store.create(path, [EVERY_KIND]) as store:
        store.publish("every", 1, "pandas", {
            "t": frame["t"], "u": frame["t"] * 2, "i": -frame["t"].astype("int64"),
            "f": frame["f"], "s": labels, "b": pa.array([b"\x00\xff"] * 100),
        })
        series = pl.Series("f", np.linspace(5, 6, 100))
        store.publish("every", 2, "polars", {
            "t": pl.Series(np.arange(100, dtype=np.uint64)), "u": pl.Series(np.arange(100, dtype=np.uint64)),
            "i": pl.Series(np.arange(100)), "f": series, "s": pl.Series([f"p{i}" for i in range(100)]),
            "b": pl.Series([b"x"] * 100),
        })
        store.seal()
        back = store.query("every", "pandas").to_pandas()
        assert (back["f"].to_numpy() == frame["f"].to_numpy()).all()
        assert back["s"].tolist() == labels.to_pylist()
        assert back["i"].tolist() == [-x for x in range(100)]
        polars = pl.from_arrow(store.query("every", "polars"))
        assert polars["f"].to_list() == series.to_list()
        assert polars["s"].to_list() == [f"p{i}" for i in range(100)]
        assert polars["b"].to_list() == [b"x"] * 100


def test_query_stream_hands_the_rows_to_polars_and_duckdb_through_the_pycapsule_interface(path):
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    rng = np.random.default_rng(5)
    store, arrays = probes_store(path, rng, {("a", 1): 3000, ("b", 2): 2000})
    stream = store.query_stream("probes", "a")
    assert len(stream) == 3000 and hasattr(stream, "__arrow_c_stream__")
    frame = pl.DataFrame(stream)
    assert frame["v"].to_list() == arrays[("a", 1)][2].tolist()
    assert frame["run"].to_list() == ["a"] * 3000
    # DuckDB asks for the schema, then the rows: the stream answers each time it is asked.
    count, top = duckdb.sql("select count(*), max(v) from stream").fetchall()[0]
    assert (count, top) == (3000, arrays[("a", 1)][2].max())
    assert pa.table(stream).num_rows == 3000
    assert pa.schema(stream).names == ["position", "run", "probe", "t", "v", "n"]
    store.close()


def run(strata_bin, *args, stdin=None):
    done = subprocess.run([strata_bin, *map(str, args)], input=stdin, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_store_written_from_python_reads_the_same_in_the_command_line(path, strata_bin):
    rng = np.random.default_rng(11)
    store, arrays = probes_store(path, rng, {("a", 1): 400, ("a", 2): 300, ("b,c", 7): 200})
    python_rows = store.query("probes").to_pylist()
    python_survey = store.survey("probes", "a", budget=64)
    store.close()
    rows = list(csv.DictReader(io.StringIO(run(strata_bin, "query", "--store", path, "probes", "--format", "csv"))))
    assert [int(r["position"]) for r in rows] == [r["position"] for r in python_rows]
    assert [r["run"] for r in rows] == [r["run"] for r in python_rows]
    assert [float(r["v"]) for r in rows] == [r["v"] for r in python_rows]
    assert [int(r["n"]) for r in rows] == [r["n"] for r in python_rows]
    v = np.concatenate([arrays[k][2] for k in sorted(arrays) if k[0] == "a"])
    fold = json.loads(run(strata_bin, "fold", "--store", path, "probes", "--track", "a", "--agg", "max", "--format", "json"))
    assert {f["field"]: f["value"] for f in fold}["v"] == v.max()
    survey = json.loads(run(strata_bin, "survey", "--store", path, "probes", "--track", "a", "--budget", 64, "--format", "json"))
    cli = {f["field"]: f["buckets"] for f in survey["fields"]}
    assert [b["max"]["value"] for b in cli["v"]] == python_survey["v"]["max"].tolist()
    assert [b["count"] for b in cli["n"]] == python_survey["n"]["count"].tolist()
    assert survey["level"] == python_survey.level


def test_a_store_written_by_the_command_line_reads_the_same_from_python(path, strata_bin):
    run(strata_bin, "declare", "--store", path, "cap", "--field", "run:str", "--field", "t:u64",
        "--field", "v:f64", "--field", "b:bytes", "--track", "run", "--axis", "t")
    lines = ["run,t,v,b"] + [f"{'ab'[i % 2]},{i},{i * 0.25 - 7},{i % 256:02x}ff" for i in range(1000)]
    run(strata_bin, "ingest", "--store", path, "cap", "--batch", 100, stdin="\n".join(lines) + "\n")
    with strata.Store.open_read_only(path) as store:
        table = store.query("cap", "b")
        assert table.column("t").to_pylist() == list(range(1, 1000, 2))
        assert table.column("v").to_pylist() == [i * 0.25 - 7 for i in range(1, 1000, 2)]
        assert table.column("b").to_pylist() == [bytes([i % 256, 255]) for i in range(1, 1000, 2)]
        assert store.fold("cap", agg="sum")["v"] == pytest.approx(sum(i * 0.25 - 7 for i in range(1000)))
        assert store.streams()[0]["fields"] == {"run": "str", "t": "u64", "v": "f64", "b": "bytes"}


def test_a_reader_beside_the_writer_follows_its_seals(path):
    writer = strata.Store.create(path, [PROBES])
    t = np.arange(10, dtype=np.uint64)
    writer.publish("probes", 1, ("a", 1), {"t": t, "v": t * 1.0, "n": t.astype(np.int64)})
    writer.seal()
    reader = strata.Store.open_reader(path)
    assert reader.query("probes").num_rows == 10
    writer.publish("probes", 2, ("a", 1), {"t": t + 10, "v": t * 1.0, "n": t.astype(np.int64)})
    writer.seal()
    assert reader.query("probes").num_rows == 10
    assert reader.refresh() is True
    assert reader.query("probes").num_rows == 20 and reader.watermark("probes") == 2
    reader.close()
    writer.close()


def longest_pause_of_python_during(work):
    """The longest a Python loop in this thread went without running while `work` ran in
    another: about `work`'s whole time if `work` holds the GIL, a switch interval if not."""
    done = threading.Event()
    spent = []

    def target():
        start = time.perf_counter()
        work()
        spent.append(time.perf_counter() - start)
        done.set()

    thread = threading.Thread(target=target)
    longest, last = 0.0, time.perf_counter()
    thread.start()
    while not done.is_set():
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    # The last gap too: with the GIL held, this thread may only get back once `work` is done.
    longest = max(longest, time.perf_counter() - last)
    thread.join()
    return longest, spent[0]


def test_seals_surveys_and_queries_release_the_gil(path):
    store = strata.Store.create(path, [PROBES])
    n = 1_000_000
    t = np.arange(n, dtype=np.uint64)
    for position in range(1, 4):
        store.publish("probes", position, ("a", position), {"t": t, "v": np.sin(t / 1e3), "n": np.arange(n)})
    for name, work in [
        ("seal", store.seal),
        ("query", lambda: store.query("probes")),
        ("survey", lambda: store.survey("probes", "a", budget=10**5)),
        ("fold p50", lambda: store.fold("probes", agg="p50")),
    ]:
        pause, spent = longest_pause_of_python_during(work)
        assert spent > 0.05, f"{name} took {spent:.3f} s: too short to tell"
        assert pause < spent / 2, f"{name}: Python waited {pause:.3f} s of its {spent:.3f} s"
    store.close()


def test_the_bench_script_runs_and_reports_every_ratio(tmp_path):
    """python/bench/bench.py in a smoke run (small sizes, the debug reference cargo test built),
    so the script that measures the rates in docs/python.md cannot rot unseen."""
    pytest.importorskip("tsdownsample")
    root = pathlib.Path(__file__).resolve().parents[2]
    reference = root / "target" / "debug" / "examples" / "reference"
    if not reference.exists():
        subprocess.run(["cargo", "build", "--quiet", "-p", "strata-python", "--example", "reference"],
                       cwd=root, check=True)
    figures = tmp_path / "figures.json"
    done = subprocess.run(
        [sys.executable, root / "python" / "bench" / "bench.py", "--rows", "30000", "--survey-rows", "200000",
         "--repeat", "1", "--reference", reference, "--json", figures],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(figures.read_text())
    assert report["publish"]["rows"] == 30000 and report["publish"]["ratio"] > 0
    assert report["query"]["rows"] == 30000 and report["query"]["ratio"] > 0
    assert [w["rows"] for w in report["survey"]][0] == 200000
    assert "x Rust's rate" in done.stdout and "tsdownsample M4" in done.stdout


def test_query_without_pyarrow_says_what_to_install(path, monkeypatch):
    with strata.Store.create(path, [PROBES]) as store:
        monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` now fails
        with pytest.raises(ImportError, match=r"pip install pyarrow\); query_stream"):
            store.query("probes")
        assert store.query_numpy("probes")["v"].dtype == np.float64
