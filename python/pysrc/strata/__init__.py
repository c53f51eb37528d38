"""strata from Python: an embedded, log-structured engine for partitioned numeric time series.

Rows go in as columns (numpy arrays, or anything numpy or Arrow can hand over without a Python
object per value), sealed durable with one barrier; they come back as a pyarrow Table
(:meth:`Store.query`), numpy arrays (:meth:`Store.query_numpy`), a budgeted display read
(:meth:`Store.survey`) or one statistic per field (:meth:`Store.fold`).

    >>> import numpy as np, strata, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "store")
    >>> capture = {"name": "capture", "fields": {"run": "str", "t": "u64", "value": "f64"},
    ...            "track": ["run"], "axis": "t"}
    >>> with strata.Store.create(path, [capture]) as store:
    ...     store.publish("capture", 1, "run_7", {"t": np.arange(1000, dtype=np.uint64),
    ...                                           "value": np.linspace(0.0, 1.0, 1000)})
    ...     store.seal()["capture"]
    ...     store.fold("capture", "run_7", agg="max")["value"]
    1
    1.0

Errors of the engine are :class:`StrataError` and its kinds: :class:`RefusedError` (a batch or
a declaration refused; nothing of it kept), :class:`FloorError` (a read beneath retired rows),
:class:`SelectionError` (a read or a retirement naming nothing the store holds: an unknown
stream or track, a range given backwards), :class:`UnreadableError` (bytes on disk that fail
their check: never wrong data). Each message is the engine's own, as the command line and
`strata view` say it.
"""

from ._strata import (
    ArrowStream,
    FloorError,
    RefusedError,
    SelectionError,
    Store,
    StrataError,
    Survey,
    UnreadableError,
    __version__,
)

__all__ = [
    "ArrowStream",
    "FloorError",
    "RefusedError",
    "SelectionError",
    "Store",
    "StrataError",
    "Survey",
    "UnreadableError",
    "__version__",
]
