"""A column whose values the store could not keep as given is refused, by field and row, in
the caller's own terms, and nothing of its batch is kept (issue #47, items 8 and 9).

A missing value (a numpy masked slot, a pandas NA, an Arrow or Polars null, a Python None) in a
measured number field is stored as null (#48, test_missing.py); in a `str` or `bytes` field it
is refused as missing, never as the NaN or the hidden value numpy would turn it into. A value
that f64 cannot hold exactly (a longdouble, an integer past 2^53) is refused rather than
rounded. A str that is not valid UTF-8 says so.

Every expectation here is worked out from the inputs (Python's exact integers, numpy's own
casts checked as preconditions), never from the module under test.
"""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import strata

ROWS = {
    "name": "rows",
    "fields": {"label": "str", "u": "u64", "i": "i64", "f": "f64", "s": "str", "b": "bytes"},
    "track": ["label"],
}
KIND = {"u": "u64", "i": "i64", "f": "f64", "s": "str", "b": "bytes"}
SLOW = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def good(n, offset):
    """A batch of `rows` every field can hold; `offset` keeps two batches' values apart."""
    return {
        "u": np.arange(offset, offset + n, dtype=np.uint64),
        "i": -np.arange(offset, offset + n, dtype=np.int64),
        "f": np.arange(offset, offset + n) * 0.5,
        "s": [f"s{offset + k}" for k in range(n)],
        "b": [bytes([(offset + k) % 256]) for k in range(n)],
    }


def as_python(field, values):
    """What `query` should answer for `values` of `field`."""
    if field in ("u", "i"):
        return [int(v) for v in values]
    if field == "f":
        return [float(v) for v in values]
    return list(values)


def refused_then_usable(path, field, column, pattern, later=None):
    """Publishes `column` as `field` of a batch and expects it refused by `pattern`, then
    publishes a good batch (its `field` as `later`) at the same position: the store takes it,
    and holds that batch's rows and none of the refused one's. Answers the refusal."""
    n = len(column)
    with strata.Store.create(path, [ROWS]) as store:
        with pytest.raises(ValueError, match=pattern) as refused:
            store.publish("rows", 1, "L", {**good(n, 0), field: column})
        assert store.seal() == {"rows": None}, "the refused batch staged something"
        batch = good(n, 1000)
        if later is not None:
            batch[field] = later
        store.publish("rows", 1, "L", batch)
        assert store.seal() == {"rows": 1}
        table = store.query("rows")
        assert table.num_rows == n
        for name, values in batch.items():
            assert table.column(name).to_pylist() == as_python(name, values), name
    return refused.value


# ---- item 8: a masked slot, and a value f64 cannot hold exactly --------------------------------

NUMERIC_DTYPES = [
    np.int8, np.int16, np.int32, np.int64,
    np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.longdouble,
]
# The fields a dtype's values may go to (signed into u64 only when non-negative: left out).
FIELDS_OF_KIND = {"u": ["u", "i", "f"], "i": ["i", "f"], "f": ["f"]}


def values_of(dtype, n):
    """`n` values of `dtype` that every field it may go to holds exactly (integers within
    ±2^53, floats of the dtype's own width, longdouble from f64s)."""
    if dtype.kind in "ui":
        info = np.iinfo(dtype)
        lo, hi = max(int(info.min), -(2**53)), min(int(info.max), 2**53)
        return st.lists(st.integers(lo, hi), min_size=n, max_size=n).map(
            lambda v: np.array(v, dtype=dtype)
        )
    width = {2: 16, 4: 32}.get(dtype.itemsize, 64)
    return st.lists(
        st.floats(allow_nan=False, allow_infinity=False, width=width), min_size=n, max_size=n
    ).map(lambda v: np.array(v, dtype=dtype))


@SLOW
@given(data=st.data())
def test_a_masked_slot_of_any_numeric_dtype_is_stored_as_null_and_never_its_hidden_value(
    tmp_path_factory, data
):
    dtype = np.dtype(data.draw(st.sampled_from(NUMERIC_DTYPES), label="dtype"))
    field = data.draw(st.sampled_from(FIELDS_OF_KIND[dtype.kind]), label="field")
    n = data.draw(st.integers(1, 30), label="n")
    # The values under the mask are ones the field could hold: only the mask makes them missing.
    values = data.draw(values_of(dtype, n), label="values")
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n), label="mask"))
    column = np.ma.masked_array(values, mask=mask)
    path = tmp_path_factory.mktemp("masked") / "store"
    # What numpy's own masked array says each row holds: its value, or None where masked.
    expected = [None if m else v for v, m in zip(as_python(field, values), mask.tolist())]
    with strata.Store.create(path, [ROWS]) as store:
        store.publish("rows", 1, "L", {**good(n, 0), field: column})
        store.seal()
        assert store.query("rows").column(field).to_pylist() == expected


LONGDOUBLE_IS_WIDER = np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant


@pytest.mark.skipif(not LONGDOUBLE_IS_WIDER, reason="longdouble is f64 here: each converts exactly")
@SLOW
@given(
    exact=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=30),
    data=st.data(),
)
def test_a_longdouble_that_f64_cannot_hold_exactly_is_refused_naming_its_row(
    tmp_path_factory, exact, data
):
    exact = np.array(exact, dtype=np.longdouble)  # each an f64: these convert exactly
    row = data.draw(st.integers(0, len(exact) - 1), label="row")
    how = data.draw(st.sampled_from(["up", "down", "past f64"]), label="how")
    column = exact.copy()
    if how == "past f64":
        column[row] = np.longdouble("1e400") * (1 if exact[row] >= 0 else -1)
    else:
        toward = np.longdouble(np.inf if how == "up" else -np.inf)
        column[row] = np.nextafter(exact[row], toward)
    # The precondition, by numpy's own cast: this row's value has no f64 of its own.
    with np.errstate(over="ignore"):
        assert np.longdouble(np.float64(column[row])) != column[row]
    refused_then_usable(
        tmp_path_factory.mktemp("longdouble") / "store", "f", column,
        rf'field "f" \(f64\): row {row + 1} holds \S+, which an f64 field cannot hold exactly',
        later=exact,
    )


@SLOW
@given(data=st.data())
@example(data=None)
def test_an_integer_that_f64_cannot_hold_exactly_is_refused_naming_its_row(tmp_path_factory, data):
    if data is None:
        # The smallest integer f64 rounds: 2^53 + 1.
        dtype, values = np.dtype(np.int64), [0, 2**53, 2**53 + 1]
    else:
        dtype = np.dtype(data.draw(st.sampled_from([np.int64, np.uint64]), label="dtype"))
        info = np.iinfo(dtype)
        near = st.integers(max(int(info.min), -(2**54)), 2**54)
        values = data.draw(
            st.lists(st.one_of(near, st.integers(int(info.min), int(info.max))), min_size=1, max_size=30),
            label="values",
        )
    column = np.array(values, dtype=dtype)
    # Python's float() of an int rounds to nearest exactly once; int() of it is exact.
    inexact = [k for k, v in enumerate(values) if int(float(v)) != v]
    path = tmp_path_factory.mktemp("integers") / "store"
    if not inexact:
        with strata.Store.create(path, [ROWS]) as store:
            store.publish("rows", 1, "L", {**good(len(values), 0), "f": column})
            store.seal()
            assert store.query("rows").column("f").to_pylist() == [float(v) for v in values]
        return
    refused_then_usable(
        path, "f", column,
        rf'field "f" \(f64\): row {inexact[0] + 1} holds {values[inexact[0]]}, '
        r"which an f64 field cannot hold exactly",
    )


# ---- item 9: a missing value called missing, a dtype called by its name ------------------------

# (field, how the caller built the column, the 1-based row of its first missing value): a str or
# bytes field is never missing (#48); a number field's missing value is stored as null
# (test_missing.py).
MISSING = [
    ("s", "pandas string", lambda pd, pl: pd.Series(["a", None, "c"], dtype="string"), 2),
    ("s", "pandas string[pyarrow]", lambda pd, pl: pd.Series(["a", "b", None], dtype="string[pyarrow]"), 3),
    ("s", "pandas default strings", lambda pd, pl: pd.Series(["a", None, "c"]), 2),
    ("s", "pandas object", lambda pd, pl: pd.Series(["a", None, "c"], dtype=object), 2),
    ("s", "pandas object with pd.NA", lambda pd, pl: pd.Series([pd.NA, "b", "c"], dtype=object), 1),
    ("s", "pyarrow string Array", lambda pd, pl: pa.array(["a", None, "c"]), 2),
    ("b", "pyarrow binary Array", lambda pd, pl: pa.array([b"a", b"b", None]), 3),
    ("s", "pyarrow ChunkedArray", lambda pd, pl: pa.chunked_array([["a", "b"], [None]]), 3),
    ("s", "Polars String", lambda pd, pl: pl.Series(["a", None, "c"]), 2),
    ("b", "Polars Binary", lambda pd, pl: pl.Series([None, b"b", b"c"]), 1),
    ("s", "a list of str", lambda pd, pl: ["a", None, "c"], 2),
    ("b", "a list of bytes", lambda pd, pl: [b"a", b"b", None], 3),
]


@pytest.mark.parametrize(("field", "how", "make", "row"), MISSING, ids=[m[1] for m in MISSING])
def test_a_missing_str_or_bytes_value_is_refused_as_missing_naming_its_row(path, field, how, make, row):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    refusal = refused_then_usable(
        path, field, make(pd, pl),
        rf'field "{field}" \({KIND[field]}\): row {row} is missing \(null\), and it is an? {KIND[field]}: '
        r"only a measured u64, i64 or f64 field may be missing",
    )
    # Not the NaN numpy makes of it.
    assert "NaN" not in str(refusal)


# (field, how the caller built the column, its dtype as the caller names it)
DTYPES = [
    ("u", "pandas boolean", lambda pd, pl: pd.Series([True, False, True], dtype="boolean"), "boolean"),
    ("u", "pandas boolean with NA", lambda pd, pl: pd.Series([True, None, True], dtype="boolean"), "boolean"),
    ("f", "pyarrow bool with a null", lambda pd, pl: pa.array([True, None]), "bool"),
    ("f", "pandas string", lambda pd, pl: pd.Series(["a", "b", "c"], dtype="string"), "string"),
    ("u", "pandas Float64", lambda pd, pl: pd.Series([1.5, 2.5, None], dtype="Float64"), "Float64"),
    ("i", "pandas double[pyarrow]",
     lambda pd, pl: pd.Series([1.5, None, 2.0], dtype="double[pyarrow]"), r"double\[pyarrow\]"),
    ("f", "Polars String", lambda pd, pl: pl.Series(["a", "b", None]), "String"),
    ("u", "Polars Boolean", lambda pd, pl: pl.Series([True, False, True]), "Boolean"),
    ("i", "pyarrow double with a null", lambda pd, pl: pa.array([1.5, None, 2.5]), "double"),
    ("f", "pyarrow string", lambda pd, pl: pa.array(["x", "y", "z"]), "string"),
]


@pytest.mark.parametrize(("field", "how", "make", "dtype"), DTYPES, ids=[d[1] for d in DTYPES])
def test_a_column_of_another_kind_is_refused_by_its_own_dtype(path, field, how, make, dtype):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    kind = KIND[field]
    refused_then_usable(
        path, field, make(pd, pl),
        rf'field "{field}" \({kind}\): a column of dtype {dtype} is not {kind} numbers',
    )


@SLOW
@given(
    before=st.text(max_size=6),  # hypothesis's text holds no surrogates
    after=st.text(max_size=6),
    surrogate=st.integers(0xD800, 0xDFFF),
    n=st.integers(1, 8),
    data=st.data(),
)
def test_a_str_with_a_lone_surrogate_is_refused_as_not_valid_utf8(
    tmp_path_factory, before, after, surrogate, n, data
):
    row = data.draw(st.integers(0, n - 1), label="row")
    column = [f"ok{k}" for k in range(n)]
    column[row] = before + chr(surrogate) + after
    as_pandas = data.draw(st.booleans(), label="as a pandas Series")
    if as_pandas:
        pd = pytest.importorskip("pandas")
        column = pd.Series(column, dtype=object)
    refused_then_usable(
        tmp_path_factory.mktemp("surrogate") / "store", "s", column,
        rf'field "s" \(str\): row {row + 1} is a str that is not valid UTF-8: '
        rf"a lone surrogate, U\+{surrogate:04X}, at index {len(before)}",
    )


@pytest.mark.parametrize("track", ["a\udc80", ["a\udc80"], ("a", "\ud800")])
def test_a_track_label_with_a_lone_surrogate_is_refused_as_not_valid_utf8(path, track):
    with strata.Store.create(path, [ROWS]) as store:
        with pytest.raises(ValueError, match=r"a track label is a str that is not valid UTF-8: a lone surrogate"):
            store.publish("rows", 1, track, good(3, 0))
        store.publish("rows", 1, "L", good(3, 0))
        assert store.seal() == {"rows": 1}
        assert store.query("rows").column("label").to_pylist() == ["L"] * 3


@pytest.mark.parametrize(
    ("field", "column", "row"),
    [
        ("s", np.ma.masked_array(np.array(["a", "b", "c"]), mask=[0, 1, 0]), 2),
        ("s", np.ma.masked_array(np.array(["a", "b", "c"], dtype=object), mask=[1, 0, 0]), 1),
        ("b", np.ma.masked_array(np.array([b"a", b"b", b"c"], dtype=object), mask=[0, 0, 1]), 3),
    ],
    ids=["str", "str objects", "bytes objects"],
)
def test_a_masked_slot_of_a_str_or_bytes_column_is_refused_naming_its_row(path, field, column, row):
    refused_then_usable(
        path, field, column,
        rf'field "{field}" \({KIND[field]}\): row {row} is missing \(masked\), and it is an? {KIND[field]}',
    )


# (field, how the caller built the column): nullable dtypes holding no missing value, taken as
# they are (a dtype that could hold a missing value is no reason to refuse or to mask a row).
PRESENT = [
    ("i", "pandas Int64", lambda pd, pl: pd.Series([-1, 0, 2**62], dtype="Int64")),
    ("u", "pandas UInt64", lambda pd, pl: pd.Series([0, 1, 2**64 - 1], dtype="UInt64")),
    ("f", "pandas Float64", lambda pd, pl: pd.Series([1.5, -0.0, 1e300], dtype="Float64")),
    ("f", "pandas Int64 into f64", lambda pd, pl: pd.Series([1, 2**53, -7], dtype="Int64")),
    ("i", "pandas int64[pyarrow]", lambda pd, pl: pd.Series([3, 2, 1], dtype="int64[pyarrow]")),
    ("s", "pandas string", lambda pd, pl: pd.Series(["a", "", "é"], dtype="string")),
    ("s", "pandas default strings", lambda pd, pl: pd.Series(["a", "b", "c"])),
    ("f", "pyarrow Array with a validity bitmap",
     lambda pd, pl: pa.array([None, 1.0, 2.0, 3.0]).slice(1)),
    ("f", "pyarrow dictionary-encoded", lambda pd, pl: pa.array([1.5, 2.5, 1.5]).dictionary_encode()),
    ("i", "pyarrow ChunkedArray", lambda pd, pl: pa.chunked_array([[1], [2, 3]])),
    ("u", "Polars UInt64", lambda pd, pl: pl.Series([0, 2**64 - 1, 5], dtype=pl.UInt64)),
    ("f", "Polars Float32", lambda pd, pl: pl.Series([0.5, 1.25, -2.0], dtype=pl.Float32)),
    ("f", "a list of float", lambda pd, pl: [1.0, 2.5, -3.0]),
    ("f", "longdouble that f64 holds", lambda pd, pl: np.array([0.1, 1e300, -5e-324], dtype=np.longdouble)),
]


@pytest.mark.parametrize(("field", "how", "make"), PRESENT, ids=[p[1] for p in PRESENT])
def test_a_column_of_a_nullable_dtype_without_a_missing_value_is_taken_as_it_is(path, field, how, make):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    column = make(pd, pl)
    # What the caller's own library says the values are.
    if hasattr(column, "to_pylist"):
        expected = column.to_pylist()
    elif hasattr(column, "to_list"):
        expected = column.to_list()
    else:
        expected = list(column)
    with strata.Store.create(path, [ROWS]) as store:
        store.publish("rows", 1, "L", {**good(len(expected), 0), field: column})
        store.seal()
        assert store.query("rows").column(field).to_pylist() == as_python(field, expected)


def test_a_str_in_a_bytes_column_is_named_a_str_even_when_it_is_not_valid_utf8(path):
    refused_then_usable(path, "b", [b"a", "\udc80"], r'field "b" \(bytes\): row 2 is a str, not bytes')
