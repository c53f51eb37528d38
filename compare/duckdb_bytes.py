"""DuckDB's bytes per row for the data sets `compare/benches/dense.rs` writes (#30).

    STRATA_DENSE_OUT=/tmp/dense cargo bench --manifest-path compare/Cargo.toml --bench dense
    python3 -m venv /tmp/duckenv && /tmp/duckenv/bin/pip install duckdb
    /tmp/duckenv/bin/python compare/duckdb_bytes.py /tmp/dense

Each Parquet file the bench wrote (the same rows strata stored in the same run) is loaded into a
table of its own DuckDB database file, checkpointed, and the file's size divided by the rows:
the figure docs/performance.md records beside strata's.
"""

import os
import sys
import tempfile

import duckdb


def main() -> None:
    folder = sys.argv[1]
    print(f"duckdb {duckdb.__version__}")
    print("| data | rows | DuckDB table, B/row |")
    print("|---|---:|---:|")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".parquet"):
            continue
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "t.duckdb")
            con = duckdb.connect(path)
            source = os.path.join(folder, name).replace("'", "''")
            con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{source}')")
            (rows,) = con.execute("SELECT count(*) FROM t").fetchone()
            con.execute("CHECKPOINT")
            con.close()
            size = os.path.getsize(path)
            wal = path + ".wal"
            if os.path.exists(wal):
                size += os.path.getsize(wal)
            print(f"| {name[: -len('.parquet')]} | {rows} | {size / rows:.2f} |")


if __name__ == "__main__":
    main()
