"""A column whose values the store could not keep as given is refused, by field and row, in
the caller's own terms, and nothing of its batch is kept (issue #47, item 8).

A numpy masked slot is refused as missing, not stored as the hidden value beneath it, until the
store can keep missing values (#48). A value that f64 cannot hold exactly (a longdouble, an
integer past 2^53) is refused rather than rounded.

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
def test_a_masked_slot_of_any_numeric_dtype_is_refused_naming_its_row(tmp_path_factory, data):
    dtype = np.dtype(data.draw(st.sampled_from(NUMERIC_DTYPES), label="dtype"))
    field = data.draw(st.sampled_from(FIELDS_OF_KIND[dtype.kind]), label="field")
    n = data.draw(st.integers(1, 30), label="n")
    # The values under the mask are ones the field could hold: only the mask can refuse them.
    values = data.draw(values_of(dtype, n), label="values")
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n), label="mask"))
    column = np.ma.masked_array(values, mask=mask)
    path = tmp_path_factory.mktemp("masked") / "store"
    if not mask.any():
        # Nothing masked: every value is there, and is kept as it is.
        with strata.Store.create(path, [ROWS]) as store:
            store.publish("rows", 1, "L", {**good(n, 0), field: column})
            store.seal()
            assert store.query("rows").column(field).to_pylist() == as_python(field, values)
        return
    row = int(np.flatnonzero(mask)[0]) + 1
    later = np.ma.masked_array(values[::-1].copy(), mask=np.zeros(n, dtype=bool))
    refused_then_usable(
        path, field, column,
        rf'field "{field}" \({KIND[field]}\): row {row} is a missing value \(masked\)',
        later=later,
    )


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
        rf'field "{field}" \({KIND[field]}\): row {row} is a missing value \(masked\)',
    )
