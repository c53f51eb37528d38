"""A time axis from Python (#48): a stream declared with `"time": <unit>` takes its axis as
times (numpy `datetime64`, pandas `to_datetime` columns, Arrow `timestamp`, Polars `Datetime`),
each converted exactly to the unit, and answers it as `timestamp[unit, tz=UTC]` (Arrow) and
`datetime64[unit]` (numpy). Every expected value here is computed by pandas, numpy or pyarrow
from the input, never by strata."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import strata

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")


def sensor(unit=None):
    decl = {"name": "sensor", "fields": {"dev": "str", "t": "u64", "v": "f64"}, "track": ["dev"], "axis": "t"}
    if unit is not None:
        decl["time"] = unit
    return decl


TIMES = [
    "2026-12-01T00:00:00.000250Z",
    "2026-12-01T00:00:00.500000Z",
    "2026-12-01T00:00:01.000001Z",
    "2027-03-31T23:59:59.999999Z",
]


def micros(times):
    """Microseconds since the epoch of a pandas datetime column, as pandas counts them."""
    return ((times - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(1, "us")).to_numpy(dtype="int64")


@pytest.mark.parametrize(
    "make",
    [
        lambda t: t,
        lambda t: t.dt.as_unit("ns"),
        lambda t: t.dt.tz_convert("Europe/Paris"),
        lambda t: t.dt.tz_convert(None),
    ],
    ids=["as-parsed", "ns", "paris", "naive-utc"],
)
def test_a_pandas_to_datetime_frame_publishes_to_a_us_stream_and_reads_back_equal(path, make):
    frame = pd.DataFrame({"t": pd.to_datetime(TIMES, utc=True), "v": [1.5, 2.5, -3.0, 4.25]})
    t = make(frame["t"])
    with strata.Store.create(path, [sensor("us")]) as store:
        store.publish("sensor", 1, "a", {"t": t, "v": frame["v"]})
        store.seal()
        table = store.query("sensor")
        numbers = store.query_numpy("sensor")
    assert table.schema.field("t").type == pa.timestamp("us", tz="UTC")
    expected = micros(frame["t"])
    assert table.column("t").cast(pa.int64()).to_pylist() == expected.tolist()
    back = table.to_pandas()
    assert str(back["t"].dtype) == "datetime64[us, UTC]"
    pd.testing.assert_series_equal(back["t"], frame["t"].dt.as_unit("us"), check_names=False)
    assert numbers["t"].dtype == np.dtype("datetime64[us]")
    np.testing.assert_array_equal(numbers["t"].view("int64"), expected)
    np.testing.assert_array_equal(numbers["v"], frame["v"].to_numpy())


def test_a_pandas_datetime_index_publishes_as_a_column(path):
    t = pd.to_datetime(TIMES, utc=True)
    with strata.Store.create(path, [sensor("us")]) as store:
        store.publish("sensor", 1, "a", {"t": t, "v": np.arange(len(TIMES), dtype="float64")})
        store.seal()
        got = store.query_numpy("sensor")["t"]
    np.testing.assert_array_equal(got.view("int64"), micros(pd.Series(t)))


def test_a_time_finer_than_the_unit_is_refused_naming_its_row(path):
    # Millisecond stream; row 3 of TIMES has microseconds that milliseconds cannot hold.
    t = pd.Series(pd.to_datetime(["2026-12-01T00:00:00.250Z", "2026-12-01T00:00:00.500Z", TIMES[2]], utc=True))
    with strata.Store.create(path, [sensor("ms")]) as store:
        with pytest.raises(ValueError, match=r'field "t".*row 3 .*finer than the stream\'s unit \(ms\)'):
            store.publish("sensor", 1, "a", {"t": t, "v": [1.0, 2.0, 3.0]})
        store.seal()
        assert store.query("sensor").num_rows == 0


def test_numpy_datetime64_ms_into_an_ms_stream(path):
    t = np.array(["2026-12-01T00:00:00.001", "2026-12-01T08:30:00.250", "2030-01-01"], dtype="datetime64[ms]")
    with strata.Store.create(path, [sensor("ms")]) as store:
        store.publish("sensor", 1, "a", {"t": t, "v": np.array([1.0, 2.0, 3.0])})
        store.seal()
        got = store.query_numpy("sensor")["t"]
        table = store.query("sensor")
    assert got.dtype == np.dtype("datetime64[ms]")
    np.testing.assert_array_equal(got, t)
    assert table.schema.field("t").type == pa.timestamp("ms", tz="UTC")
    assert str(table.to_pandas()["t"].dtype) == "datetime64[ms, UTC]"


def test_coarser_numpy_units_convert_exactly_and_finer_ones_only_when_whole(path):
    days = np.array(["2026-12-01", "2026-12-02"], dtype="datetime64[D]")
    nanos = np.array(["2026-12-03T00:00:00.123000000"], dtype="datetime64[ns]")
    with strata.Store.create(path, [sensor("ms")]) as store:
        store.publish("sensor", 1, "a", {"t": days, "v": [1.0, 2.0]})
        store.publish("sensor", 2, "a", {"t": nanos, "v": [3.0]})
        store.seal()
        got = store.query_numpy("sensor")["t"]
    np.testing.assert_array_equal(got, np.concatenate([days, nanos]).astype("datetime64[ms]"))


def test_arrow_timestamps_and_polars_datetimes_publish(path):
    seconds = pa.array([1_796_083_200, 1_796_083_201], pa.timestamp("s", tz="UTC"))
    polars_t = pl.Series("t", pd.to_datetime(TIMES[:2], utc=True))
    with strata.Store.create(path, [sensor("us")]) as store:
        store.publish("sensor", 1, "a", {"t": seconds, "v": [1.0, 2.0]})
        store.publish("sensor", 2, "b", {"t": polars_t, "v": [3.0, 4.0]})
        store.publish("sensor", 3, "c", {"t": pa.chunked_array([seconds]), "v": [5.0, 6.0]})
        store.seal()
        table = store.query("sensor")
    expected = (
        pc.multiply(seconds.cast(pa.int64()), 1_000_000).to_pylist()
        + polars_t.cast(pl.Int64).to_list()
        + pc.multiply(seconds.cast(pa.int64()), 1_000_000).to_pylist()
    )
    assert table.column("t").cast(pa.int64()).to_pylist() == expected


def test_plain_integers_still_publish_to_a_time_axis(path):
    ints = np.array([1_796_083_200_000_250, 1_796_083_200_500_000], dtype="uint64")
    with strata.Store.create(path, [sensor("us")]) as store:
        store.publish("sensor", 1, "a", {"t": ints, "v": [1.0, 2.0]})
        store.seal()
        back = store.query("sensor").to_pandas()["t"]
    expected = pd.Series(pd.to_datetime(ints.astype("int64"), unit="us", utc=True))
    pd.testing.assert_series_equal(back, expected, check_names=False)


@pytest.mark.parametrize(
    "t, why",
    [
        (pd.Series(pd.to_datetime(["2026-12-01", None], utc=True)), r"row 2 is missing \(NaT\)"),
        (np.array(["2026-12-01", "NaT"], dtype="datetime64[s]"), r"row 2 is missing \(NaT\)"),
        (pa.array([5, None], pa.timestamp("ms")), r"row 2 is missing \(null\)"),
        (np.array(["2026-12-01", "1969-12-31T23:59:59"], dtype="datetime64[s]"), r"row 2 holds -1 s .*before the epoch"),
    ],
    ids=["pandas-nat", "numpy-nat", "arrow-null", "before-epoch"],
)
def test_a_missing_or_pre_epoch_time_is_refused_naming_its_row(path, t, why):
    with strata.Store.create(path, [sensor("ms")]) as store:
        with pytest.raises(ValueError, match=why):
            store.publish("sensor", 1, "a", {"t": t, "v": [1.0, 2.0]})


@pytest.mark.parametrize(
    "t",
    [
        pd.Series(pd.to_datetime(TIMES[:2], utc=True)),
        np.array(["2026-12-01", "2026-12-02"], dtype="datetime64[ms]"),
        pa.array([1, 2], pa.timestamp("us", tz="UTC")),
    ],
    ids=["pandas", "numpy", "arrow"],
)
def test_times_for_a_plain_axis_are_refused_saying_to_declare_a_time_unit(path, t):
    with strata.Store.create(path, [sensor()]) as store:
        with pytest.raises(ValueError, match=r'"t" is the axis, a plain u64.*declare the axis with a time unit'):
            store.publish("sensor", 1, "a", {"t": t, "v": [1.0, 2.0]})
        store.publish("sensor", 1, "a", {"t": np.array([1, 2], dtype="uint64"), "v": [1.0, 2.0]})
        store.seal()
        table = store.query("sensor")
    assert table.schema.field("t").type == pa.uint64()
