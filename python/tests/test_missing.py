"""Missing values from Python (#48): a measured number's missing value — a pandas NA, a numpy
masked slot, an Arrow or Polars null, a `None` — is stored as null and read back as null; a NaN
is a value, stored and read back as NaN, and so are the infinities. The axis, a `str` and a
`bytes` field are never missing: a missing value there is refused naming the field and the row,
and nothing of its batch is kept.

Every expectation is computed by pandas, pyarrow, Polars or numpy from the inputs (pandas'
NaN-skipping `count`, `min`, `max`, `mean`, `sum`), never by the module under test.
"""

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import strata

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")

# A stream with a measured field of each number kind, and a second f64 for a second source.
LOGGER = {
    "name": "logger",
    "fields": {"run": "str", "t": "u64", "f": "f64", "g": "f64", "n": "i64", "u": "u64", "m": "f64"},
    "track": ["run"],
    "axis": "t",
}
MEASURED = ["f", "g", "n", "u", "m"]
SLOW = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def cells(array):
    """An Arrow array's rows as pyarrow reads them, with null (`None`) and NaN (`"NaN"`) kept
    apart and each comparable with `==` (NaN is not equal to itself)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return [
        "NaN" if isinstance(v, float) and math.isnan(v) else v for v in array.to_pylist()
    ]


def assert_same_rows(got, expected):
    """Each expected column (a pyarrow Table's) equal in type and cell for cell in `got`."""
    for name in expected.column_names:
        assert got.column(name).type == expected.column(name).type, name
        assert cells(got.column(name)) == cells(expected.column(name)), name


# A measured value: finite, an infinity, NaN, or missing (None). Floats within ±1e9 and of few
# digits keep pandas' and strata's sums within rounding of each other.
FINITE = st.floats(-1e9, 1e9, allow_nan=False).map(lambda x: round(x, 3))
FLOAT_VALUE = st.one_of(FINITE, FINITE, FINITE, st.just(math.nan), st.just(math.inf), st.just(-math.inf))
FLOAT_CELL = st.one_of(FLOAT_VALUE, st.none())
INT_CELL = st.one_of(st.integers(-(2**62), 2**62), st.none())
UINT_CELL = st.one_of(st.integers(0, 2**64 - 1), st.none())


def frame_of(data, n):
    """A pandas frame of `n` logger rows drawn by hypothesis: `f` numpy float64 with NaN and
    infinities (NaN is pandas' own missing marker there, and a value to strata), `g` nullable
    `Float64` with `pd.NA`, `n` nullable `Int64`, `u` nullable `UInt64`; and `m`, a numpy
    masked array beside it."""
    f = data.draw(st.lists(FLOAT_VALUE, min_size=n, max_size=n), label="f")
    g = data.draw(st.lists(st.one_of(FINITE, st.none()), min_size=n, max_size=n), label="g")
    k = data.draw(st.lists(INT_CELL, min_size=n, max_size=n), label="n")
    u = data.draw(st.lists(UINT_CELL, min_size=n, max_size=n), label="u")
    m = data.draw(st.lists(FINITE, min_size=n, max_size=n), label="m")
    mask = data.draw(st.lists(st.booleans(), min_size=n, max_size=n), label="mask")
    frame = pd.DataFrame({
        "t": np.arange(n, dtype=np.uint64) * 10,
        "f": np.array(f, dtype=np.float64),
        "g": pd.array(g, dtype="Float64"),
        "n": pd.array(k, dtype="Int64"),
        "u": pd.array(u, dtype="UInt64"),
    })
    # Beneath the mask a value no row should show: the masked slot's hidden value.
    hidden = np.where(mask, 5e12, np.array(m))
    masked = np.ma.masked_array(hidden, mask=mask)
    return frame, masked


def expected_of(frame, masked):
    """What the store should hold, as pyarrow builds it from the caller's own columns:
    pandas' nullable columns by their own Arrow conversion (NA as null), the numpy float64
    column as it is (NaN as NaN, not null: `from_pandas=False`), the masked array by its mask."""
    return pa.table({
        "t": pa.array(frame["t"].to_numpy()),
        "f": pa.array(frame["f"].to_numpy(), from_pandas=False),
        "g": pa.array(frame["g"]),
        "n": pa.array(frame["n"]),
        "u": pa.array(frame["u"]),
        "m": pa.array(np.ma.getdata(masked), mask=np.ma.getmaskarray(masked)),
    })


def publish_frame(store, frame, masked, position=1, run="a"):
    store.publish("logger", position, run, {**{c: frame[c] for c in frame.columns}, "m": masked})


@SLOW
@given(data=st.data(), n=st.integers(1, 60))
def test_a_pandas_frame_with_nan_na_and_a_masked_array_reads_back_equal(tmp_path_factory, data, n):
    frame, masked = frame_of(data, n)
    expected = expected_of(frame, masked)
    path = tmp_path_factory.mktemp("pandas") / "store"
    with strata.Store.create(path, [LOGGER]) as store:
        publish_frame(store, frame, masked)
        assert store.seal() == {"logger": 1}
    with strata.Store.open_read_only(path) as reader:
        table = reader.query("logger", "a")
    assert_same_rows(table, expected)
    # In Arrow every measured field may be null; a null is never the masked slot's hidden value.
    assert all(table.schema.field(name).nullable for name in MEASURED)
    assert 5e12 not in table.column("m").to_pylist()
    # pandas with pyarrow-backed dtypes: NA where a row is missing, NaN where it is NaN.
    back = table.to_pandas(types_mapper=pd.ArrowDtype)
    for name in ("g", "n", "u"):
        assert back[name].isna().tolist() == frame[name].isna().tolist(), name
    assert back["m"].isna().tolist() == np.ma.getmaskarray(masked).tolist()
    assert not back["f"].isna().any()  # NaN is a value here, not NA
    # pandas' own defaults: the nullable columns compare equal as the nullable dtypes they
    # were, and the numpy float64 column (NaN for null) equal to the one published.
    nullable = table.to_pandas(types_mapper={
        pa.int64(): pd.Int64Dtype(), pa.uint64(): pd.UInt64Dtype(),
    }.get)
    pd.testing.assert_series_equal(nullable["n"], frame["n"], check_names=False)
    pd.testing.assert_series_equal(nullable["u"], frame["u"], check_names=False)
    pd.testing.assert_series_equal(table.to_pandas()["f"], frame["f"], check_names=False)


@SLOW
@given(data=st.data(), n=st.integers(1, 60))
@example(data=None, n=4)  # every row missing in every measured field
def test_folds_count_and_skip_missing_values_as_pandas_does(tmp_path_factory, data, n):
    if data is None:
        frame = pd.DataFrame({
            "t": np.arange(n, dtype=np.uint64), "f": np.full(n, np.nan),
            "g": pd.array([None] * n, dtype="Float64"), "n": pd.array([None] * n, dtype="Int64"),
            "u": pd.array([None] * n, dtype="UInt64"),
        })
        masked = np.ma.masked_array(np.zeros(n), mask=np.ones(n, dtype=bool))
    else:
        frame, masked = frame_of(data, n)
    # pandas' NaN-skipping answers, the masked array as a pandas column with NA where masked.
    columns = {
        "f": frame["f"], "g": frame["g"], "n": frame["n"], "u": frame["u"],
        "m": pd.Series(pd.array(np.ma.getdata(masked), dtype="Float64")).mask(np.ma.getmaskarray(masked)),
    }
    path = tmp_path_factory.mktemp("fold") / "store"
    with strata.Store.create(path, [LOGGER]) as store:
        publish_frame(store, frame, masked)
        store.seal()
        folds = {agg: store.fold("logger", "a", agg=agg) for agg in ("count", "min", "max", "mean", "sum")}
    for name, column in columns.items():
        count = int(column.count())
        assert folds["count"][name] == count, name
        if count == 0:
            assert [folds[agg][name] for agg in ("min", "max", "mean", "sum")] == [None] * 4, name
            continue
        assert folds["min"][name] == column.min(), name
        assert folds["max"][name] == column.max(), name
        if name in ("n", "u"):
            continue  # integers of up to 2^64: their mean and sum are floats of rounded terms
        with np.errstate(invalid="ignore"):  # +inf and -inf in one column: NaN, as IEEE says
            answers = (("mean", column.mean()), ("sum", column.sum()))
        for agg, want in answers:
            got = folds[agg][name]
            if math.isnan(want) or math.isinf(want):
                # +inf and -inf both present (NaN), or one of them: as IEEE arithmetic says.
                assert (math.isnan(got) and math.isnan(want)) or got == want, (name, agg)
            else:
                # Sums in another order round apart by at most a few ulps of the terms' sum.
                tolerance = 1e-12 * float(column.abs().sum()) + 1e-9
                assert got == pytest.approx(float(want), rel=1e-9, abs=tolerance), (name, agg)


ARROW_COLUMNS = st.integers(1, 60).flatmap(lambda n: st.fixed_dictionaries({
    "f": st.lists(FLOAT_CELL, min_size=n, max_size=n),
    "g": st.lists(FLOAT_CELL, min_size=n, max_size=n),
    "n": st.lists(INT_CELL, min_size=n, max_size=n),
    "u": st.lists(UINT_CELL, min_size=n, max_size=n),
    "m": st.lists(st.one_of(st.integers(-(2**31), 2**31 - 1), st.none()), min_size=n, max_size=n),
}))


def arrow_table(columns):
    """A pyarrow table of the drawn columns: None as null, NaN as NaN (pyarrow keeps them apart
    from Python objects); `m` is int32, which the f64 field holds exactly."""
    n = len(columns["f"])
    return pa.table({
        "t": pa.array(range(n), pa.uint64()),
        "f": pa.array(columns["f"], pa.float64()),
        "g": pa.array(columns["g"], pa.float64()),
        "n": pa.array(columns["n"], pa.int64()),
        "u": pa.array(columns["u"], pa.uint64()),
        "m": pa.array(columns["m"], pa.int32()),
    })


@SLOW
@given(columns=ARROW_COLUMNS, chunk=st.integers(1, 20))
def test_a_parquet_file_written_by_pyarrow_with_nulls_and_nan_reads_back_equal(tmp_path_factory, columns, chunk):
    written = arrow_table(columns)
    folder = tmp_path_factory.mktemp("parquet")
    pq.write_table(written, folder / "logger.parquet", row_group_size=chunk)
    table = pq.read_table(folder / "logger.parquet")  # columns of several chunks
    with strata.Store.create(folder / "store", [LOGGER]) as store:
        store.publish("logger", 1, "a", {name: table.column(name) for name in table.column_names})
        store.seal()
        got = store.query("logger", "a")
    expected = written.set_column(5, "m", written.column("m").cast(pa.float64()))
    assert_same_rows(got, expected)


@SLOW
@given(columns=ARROW_COLUMNS)
def test_a_polars_frame_with_nulls_and_nan_reads_back_equal(tmp_path_factory, columns):
    from polars.testing import assert_frame_equal

    frame = pl.from_arrow(arrow_table(columns))
    # Polars keeps a NaN a NaN and a null a null: the precondition of the comparison below.
    assert frame["f"].is_null().to_list() == [v is None for v in columns["f"]]
    with strata.Store.create(tmp_path_factory.mktemp("polars") / "store", [LOGGER]) as store:
        store.publish("logger", 1, "a", {name: frame[name] for name in frame.columns})
        store.seal()
        back = pl.DataFrame(store.query_stream("logger", "a"))
    expected = frame.with_columns(pl.col("m").cast(pl.Float64))
    assert_frame_equal(back.select(expected.columns), expected)
    for name in ("f", "g"):  # NaN and null apart, row for row, as Polars reads them
        assert back[name].is_nan().fill_null(False).to_list() == expected[name].is_nan().fill_null(False).to_list()
        assert back[name].is_null().to_list() == expected[name].is_null().to_list()


# (how the caller built the column, the column, the values pyarrow should read back)
OBJECTS = [
    ("a list with None and NaN", lambda: [1.5, None, math.nan, 2.0], [1.5, None, "NaN", 2.0]),
    ("a pandas object column with None, pd.NA and NaN",
     lambda: pd.Series([1.5, None, pd.NA, math.nan], dtype=object), [1.5, None, None, "NaN"]),
    ("a numpy object array with pd.NA", lambda: np.array([pd.NA, 2, 3.5], dtype=object), [None, 2.0, 3.5]),
    ("a masked object array", lambda: np.ma.masked_array(np.array([1, "x", 2.5], dtype=object), mask=[0, 1, 0]),
     [1.0, None, 2.5]),
    ("pandas Float64 with NA", lambda: pd.Series([None, 0.5, 1.0], dtype="Float64"), [None, 0.5, 1.0]),
    ("pandas Int64 with NA into f64", lambda: pd.Series([1, None, 2**53], dtype="Int64"), [1.0, None, float(2**53)]),
    ("pandas double[pyarrow] with null and NaN",
     lambda: pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array([[1.0, None, math.nan]]))),
     [1.0, None, "NaN"]),
    ("pyarrow float16 with a null", lambda: pa.array(np.array([0.5, 1.5, 2.5], dtype=np.float16), mask=np.array([0, 0, 1], bool)),
     [0.5, 1.5, None]),
    ("pyarrow dictionary with a null key",
     lambda: pa.DictionaryArray.from_arrays(pa.array([0, None, 1, 0], pa.int8()), pa.array([2.5, -1.0])),
     [2.5, None, -1.0, 2.5]),
    ("pyarrow dictionary with a null value",
     lambda: pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), pa.array([None, 7.0])),
     [None, 7.0, None]),
    ("Polars Float32 with null and NaN", lambda: pl.Series([None, 1.5, float("nan")], dtype=pl.Float32),
     [None, 1.5, "NaN"]),
    ("Polars Int8 with null", lambda: pl.Series([None, -3, 4], dtype=pl.Int8), [None, -3.0, 4.0]),
]


@pytest.mark.parametrize(("how", "make", "expected"), OBJECTS, ids=[o[0] for o in OBJECTS])
def test_every_kind_of_missing_value_in_an_f64_field_is_stored_as_null(path, how, make, expected):
    column = make()
    n = len(expected)
    with strata.Store.create(path, [LOGGER]) as store:
        good = {name: np.zeros(n, dtype=np.int64) for name in ("n", "u")}
        store.publish("logger", 1, "a", {
            "t": np.arange(n, dtype=np.uint64), "f": column, "g": np.zeros(n), "m": np.zeros(n), **good,
        })
        store.seal()
        assert cells(store.query("logger").column("f")) == expected


# (field, how the caller built the column, the column, the values pyarrow should read back)
INTEGERS = [
    ("n", "pandas Int64", pd.Series([None, -(2**63), 2**63 - 1], dtype="Int64"), [None, -(2**63), 2**63 - 1]),
    ("u", "pandas UInt64", pd.Series([2**64 - 1, None, 0], dtype="UInt64"), [2**64 - 1, None, 0]),
    ("n", "pandas int64[pyarrow]", pd.Series([2**62 + 1, None, 5], dtype="int64[pyarrow]"), [2**62 + 1, None, 5]),
    ("u", "pyarrow uint64", pa.array([None, 2**64 - 1, 1], pa.uint64()), [None, 2**64 - 1, 1]),
    ("n", "pyarrow ChunkedArray", pa.chunked_array([[1, 2], [None]], pa.int64()), [1, 2, None]),
    ("u", "Polars UInt64", pl.Series([None, 2**64 - 1, 3], dtype=pl.UInt64), [None, 2**64 - 1, 3]),
    ("n", "Polars Int64", pl.Series([-(2**63), None, 3], dtype=pl.Int64), [-(2**63), None, 3]),
    ("n", "a list with None", [None, 2**62 + 1, -1], [None, 2**62 + 1, -1]),
    ("u", "a masked uint64 array", np.ma.masked_array(np.array([1, 2**64 - 1, 3], dtype=np.uint64), mask=[0, 0, 1]),
     [1, 2**64 - 1, None]),
    ("n", "a masked int8 array", np.ma.masked_array(np.array([-5, 6, 7], dtype=np.int8), mask=[1, 0, 0]), [None, 6, 7]),
]


@pytest.mark.parametrize(("field", "how", "column", "expected"), INTEGERS, ids=[i[1] for i in INTEGERS])
def test_a_missing_integer_is_null_and_the_others_keep_every_bit(path, field, how, column, expected):
    # Were the column converted through float64 (what numpy makes of an integer column with a
    # missing value), the integers past 2^53 would come back changed.
    n = len(expected)
    with strata.Store.create(path, [LOGGER]) as store:
        store.publish("logger", 1, "a", {
            "t": np.arange(n, dtype=np.uint64), "f": np.zeros(n), "g": np.zeros(n), "m": np.zeros(n),
            "n": np.zeros(n, dtype=np.int64), "u": np.zeros(n, dtype=np.uint64), field: column,
        })
        store.seal()
        assert store.query("logger").column(field).to_pylist() == expected


def test_query_numpy_answers_a_masked_array_where_a_field_has_nulls(path):
    f = np.ma.masked_array([1.5, 99.0, np.nan, -np.inf], mask=[0, 1, 0, 0])
    n = pd.Series([7, None, 9, None], dtype="Int64")
    with strata.Store.create(path, [LOGGER]) as store:
        store.publish("logger", 1, "a", {
            "t": np.arange(4, dtype=np.uint64), "f": f, "g": np.arange(4.0), "m": np.zeros(4),
            "n": n, "u": np.arange(4, dtype=np.uint64),
        })
        store.seal()
        got = store.query_numpy("logger")
    assert isinstance(got["f"], np.ma.MaskedArray) and isinstance(got["n"], np.ma.MaskedArray)
    assert np.ma.getmaskarray(got["f"]).tolist() == np.ma.getmaskarray(f).tolist()
    assert np.ma.getmaskarray(got["n"]).tolist() == n.isna().tolist()
    # The present values as given, NaN and -inf among them (numpy's NaN-aware compare).
    np.testing.assert_array_equal(got["f"].compressed(), f.compressed())
    assert got["n"].compressed().tolist() == n.dropna().tolist() and got["n"].dtype == np.int64
    # A field without a null is a plain array, as before.
    assert type(got["g"]) is np.ndarray and got["g"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_a_survey_draws_a_field_where_another_is_missing(path):
    n = 400
    g = pd.Series(np.arange(n, dtype=np.float64), dtype="Float64")
    g[n // 2:] = pd.NA  # the second half of `g` is missing; `f` is whole
    with strata.Store.create(path, [LOGGER]) as store:
        store.publish("logger", 1, "a", {
            "t": np.arange(n, dtype=np.uint64), "f": np.arange(n, dtype=np.float64), "g": g,
            "n": np.zeros(n, dtype=np.int64), "u": np.zeros(n, dtype=np.uint64), "m": np.zeros(n),
        })
        store.seal()
        survey = store.survey("logger", "a", budget=80)
    f, gs = survey["f"], survey["g"]
    assert f["count"].sum() == n and gs["count"].sum() == g.count()
    assert f["max"].max() == n - 1 and gs["max"].max() == g.max()
    assert not np.isnan(gs["mean"]).any()  # no bucket of `g` holds only missing values
    assert len(survey) == len(f["count"]) >= len(gs["count"])


# ---- the axis, str and bytes are never missing --------------------------------------------------

# (field, how the caller built the column, the column, the 1-based row, what the caller calls it)
NEVER = [
    ("t", "pandas UInt64", pd.Series([0, None, 2], dtype="UInt64"), 2, "null"),
    ("t", "pyarrow uint64", pa.array([0, 1, None], pa.uint64()), 3, "null"),
    ("t", "Polars UInt64", pl.Series([None, 1, 2], dtype=pl.UInt64), 1, "null"),
    ("t", "a masked array", np.ma.masked_array(np.arange(3, dtype=np.uint64), mask=[0, 1, 0]), 2, "masked"),
    ("t", "a list with None", [0, 1, None], 3, "null"),
    ("t", "a pandas object column with pd.NA", pd.Series([0, pd.NA, 2], dtype=object), 2, "null"),
]


@pytest.mark.parametrize(("field", "how", "column", "row", "called"), NEVER, ids=[c[1] for c in NEVER])
def test_a_missing_axis_is_refused_naming_its_row_and_nothing_is_kept(path, field, how, column, row, called):
    zeros = {"f": np.zeros(3), "g": np.zeros(3), "m": np.zeros(3), "n": np.zeros(3, dtype=np.int64),
             "u": np.zeros(3, dtype=np.uint64)}
    with strata.Store.create(path, [LOGGER]) as store:
        with pytest.raises(
            ValueError,
            match=rf'field "t" \(u64\): row {row} is missing \({called}\), and it is the axis: every row needs one',
        ):
            store.publish("logger", 1, "a", {**zeros, "t": column})
        assert store.seal() == {"logger": None}, "the refused batch staged something"
        store.publish("logger", 1, "a", {**zeros, "t": np.arange(3, dtype=np.uint64)})
        assert store.seal() == {"logger": 1}
        assert store.query("logger").column("t").to_pylist() == [0, 1, 2]


def test_a_track_label_is_never_missing(path):
    zeros = {"t": np.arange(3, dtype=np.uint64), "f": np.zeros(3), "g": np.zeros(3), "m": np.zeros(3),
             "n": np.zeros(3, dtype=np.int64), "u": np.zeros(3, dtype=np.uint64)}
    with strata.Store.create(path, [LOGGER]) as store:
        with pytest.raises(TypeError, match="a track label is a str .*not NoneType"):
            store.publish("logger", 1, [None], zeros)
        assert store.seal() == {"logger": None}
