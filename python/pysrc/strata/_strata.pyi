"""Type stubs of strata's extension module (re-exported by the package `strata`)."""

from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any, Literal, TypedDict, Union

import numpy as np
import numpy.typing as npt
import pyarrow

__version__: str

Kind = Literal["u64", "i64", "f64", "str", "bytes"]
Path = Union[str, PathLike[str]]
#: One label (a `str`, or an `int` for a `u64` track field) or a sequence of them, outermost
#: first: a prefix of the stream's track fields.
Track = Union[str, int, Sequence[Union[str, int]], None]
#: A column: a numpy array, anything numpy takes without a copy per value (the buffer
#: protocol, pandas, Polars), an Arrow array (`__arrow_c_array__`), or for `str` and `bytes`
#: fields a sequence of `str` or `bytes`.
ColumnLike = Any

class StreamSpec(TypedDict, total=False):
    """A stream's declaration as plain Python."""

    name: str
    fields: Union[Mapping[str, Kind], Sequence[tuple[str, Kind]]]
    track: Sequence[str]
    axis: str | None
    ladder: tuple[int, int] | None

class ConfigSpec(TypedDict, total=False):
    """The bounds and sizes a Python caller may set (docs/python.md, *Config*)."""

    staged_bytes_max: int
    manifest_rewrite_bytes: int
    compact_files_max: int
    compact_inputs_min: int
    compact_inputs_max: int
    compact_step_bytes_max: int
    open_segments_max: int
    decoded_chunks_bytes_max: int
    decoded_cells_bytes_max: int
    reader_processes_max: int
    arrow_batch_rows: int
    pack_columns: bool

class FieldCells(TypedDict):
    """One measured field's buckets in a survey, each array one entry a bucket."""

    first: npt.NDArray[Any]
    first_axis: npt.NDArray[np.uint64]
    last: npt.NDArray[Any]
    last_axis: npt.NDArray[np.uint64]
    min: npt.NDArray[Any]
    min_axis: npt.NDArray[np.uint64]
    max: npt.NDArray[Any]
    max_axis: npt.NDArray[np.uint64]
    count: npt.NDArray[np.uint64]
    sum: npt.NDArray[np.float64]
    sum_sq: npt.NDArray[np.float64]
    mean: npt.NDArray[np.float64]

class StrataError(Exception):
    """An error of the engine; its message is the engine's own."""

class RefusedError(StrataError):
    """A batch or a declaration was refused: nothing of it was kept; the store is usable."""

class SelectionError(StrataError):
    """A read or a retirement names nothing the store can answer: an unknown stream or track,
    more labels than the track has fields, a range given backwards, or a retirement of nothing.
    Nothing was read or changed."""

class FloorError(StrataError):
    """A read reached beneath a floor: the rows there were retired (trim_to, retention)."""

class UnreadableError(StrataError):
    """Bytes on disk failed their check, or a file could not be read: never wrong data."""

class ArrowStream:
    """A query's rows (Arrow batches, shared, not copied) behind the Arrow PyCapsule interface:
    any consumer may read them, as often as it asks."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def __arrow_c_schema__(self) -> object: ...
    def __len__(self) -> int: ...

class Survey:
    """A budgeted display read's answer."""

    #: The level whose cells answer.
    level: int
    #: Adjacent cells of `level` merged per bucket (1: none).
    group: int
    #: The axis span answered, both ends included; `None` when nothing is recorded.
    span: tuple[int, int] | None
    #: Field name to its arrays, measured fields in declaration order.
    fields: dict[str, FieldCells]
    def __getitem__(self, field: str) -> FieldCells: ...
    def __len__(self) -> int: ...

class Store:
    """A strata store. Writes go through one writer (`create`, `open`); readers beside it
    (`open_reader`) or of a quiet store (`open_read_only`) write nothing. A `Store` may be
    shared between threads; its calls run one at a time. Close it (or use `with`) to let go of
    the folder's lock or a reader's pin."""

    @staticmethod
    def create(path: Path, streams: Union[StreamSpec, Iterable[StreamSpec]], *, config: ConfigSpec | None = None) -> Store:
        """Creates a store in folder `path` (missing or empty) with `streams` declared."""
    @staticmethod
    def open(path: Path, streams: Union[StreamSpec, Iterable[StreamSpec], None] = None, *, config: ConfigSpec | None = None) -> Store:
        """Opens the store in `path` to read and write (taking its lock); `streams` declares
        streams the store has not recorded."""
    @staticmethod
    def open_read_only(path: Path, *, config: ConfigSpec | None = None) -> Store:
        """Opens the store in `path` for reading only: nothing on disk is written."""
    @staticmethod
    def open_reader(path: Path, *, config: ConfigSpec | None = None) -> Store:
        """Opens a reader beside a writer that may be running in another process; `refresh`
        follows what the writer made durable since."""
    @property
    def path(self) -> str:
        """The store's folder."""
    def streams(self) -> list[StreamSpec]:
        """The declared streams, each as the dict it is declared with."""
    def publish(self, stream: str, position: int, track: Track, columns: Mapping[str, ColumnLike]) -> None:
        """Stages a batch of rows at `position` for `track`: `columns` maps every field but
        the track's (the axis included) to its values, all as long. Nothing is durable until
        `seal`. In a measured number field a missing value (a masked slot, a pandas NA, an
        Arrow or Polars null, a None) is stored as null; NaN and the infinities are values,
        stored as they are. A refused batch (RefusedError, or ValueError for a column that
        cannot be given as the field's kind without changing a value: a missing axis, str or
        bytes value, a value f64 cannot hold exactly, a str that is not valid UTF-8) stages
        nothing. The axis of a stream declared with a `"time"` unit also takes times (numpy
        `datetime64`, pandas datetimes, Arrow `timestamp`), each converted exactly to the unit."""
    def seal(self) -> dict[str, int | None]:
        """Makes everything staged durable with one barrier; answers each stream's watermark."""
    def compact(self) -> int:
        """Merges segments until none is left to merge; answers the steps taken."""
    def trim_to(self, stream: str, horizon: int) -> int:
        """Retires every row of `stream` at or below position `horizon`; answers how many
        partitions' floors it raised. Reads beneath a floor raise FloorError."""
    def retire(self, stream: str, track: Track = None, *, all: bool = False) -> int:
        """Retires the partitions under `track` wholly; answers how many floors it recorded.
        Every track only with `all=True`: no track is refused (SelectionError), as is a track
        never sealed or one with nothing live."""
    def refresh(self) -> bool:
        """A reader follows what the writer made durable since; answers whether it moved."""
    def watermark(self, stream: str, track: Track = None) -> int | None:
        """The position through which `stream` is durable, or None. A barrier covers every
        partition, so every track shares it: `track` is checked, and does not narrow it."""
    def query(self, stream: str, track: Track = None, start: int | None = None, end: int | None = None) -> pyarrow.Table:
        """Rows with positions in `start..=end` (both included) under `track`, in publish
        order: a `position` column, then every field in declaration order (a time axis as
        `timestamp[unit, tz=UTC]`; `query_numpy` gives it as `datetime64[unit]`)."""
    def query_stream(self, stream: str, track: Track = None, start: int | None = None, end: int | None = None) -> ArrowStream:
        """`query`'s rows behind the Arrow PyCapsule interface, for Polars
        (`polars.DataFrame(…)`), DuckDB or nanoarrow without a pyarrow Table."""
    def query_numpy(self, stream: str, track: Track = None, start: int | None = None, end: int | None = None) -> dict[str, npt.NDArray[Any]]:
        """`query`'s rows as numpy arrays (numbers typed; `str` and `bytes` as object arrays);
        a number field with a null row as a numpy masked array, the null rows masked."""
    def survey(self, stream: str, track: Track = None, start: int | None = None, end: int | None = None, budget: int = 4000) -> Survey:
        """The finest cells over axis `start..=end` whose points fit `budget` (4 a bucket,
        for each measured field)."""
    def fold(
        self,
        stream: str,
        track: Track = None,
        start: int | None = None,
        end: int | None = None,
        agg: str = "mean",
    ) -> dict[str, int | float | None]:
        """One statistic per measured field over axis `start..=end`: `agg` one of min max mean
        sum count p0..p100 (nearest rank), over the values present (a null or a NaN is
        skipped; `count` counts the values present). `None` where the range holds none."""
    def close(self) -> None:
        """Lets go of the store; later calls raise StrataError."""
    def __enter__(self) -> Store: ...
    def __exit__(self, *args: object) -> None: ...
