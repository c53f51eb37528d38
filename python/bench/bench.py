"""strata from Python, timed against its peers in one run (docs/python.md, "Measured").

1. `publish` + `seal` of --rows rows from numpy, against the Rust `publish_columns` + `seal`
   of the same arrays (python/examples/reference.rs, run by this script): target >= 0.8x.
2. `query` of those rows to a pyarrow Table, against the Rust `query_runs` read of the same
   store touching every value: target >= 0.5x.
3. `survey` of --survey-rows rows from a store, against tsdownsample's `M4Downsampler` over the
   same numpy arrays in memory, at the same point budget: the whole span, then zoom windows.

    python python/bench/bench.py                          # 10^7 and 10^8 rows
    python python/bench/bench.py --rows 100000 --survey-rows 1000000   # a smoke run

The Rust reference is built with `cargo build --release -p strata-python --example reference`
unless --reference names it. Each timing is the best of --repeat runs.
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import strata

ROOT = pathlib.Path(__file__).resolve().parents[2]
STREAM = {"name": "s", "fields": {"run": "str", "t": "u64", "v": "f64"}, "track": ["run"], "axis": "t"}
CHUNK = 1_000_000


def walk(n, seed):
    """A random walk on a unit axis: the shape display reads are asked for."""
    rng = np.random.default_rng(seed)
    return np.arange(n, dtype=np.uint64), np.cumsum(rng.normal(0, 1, n))


def best(repeat, work):
    """The fastest of `repeat` timings of `work()` (which may prepare untimed and answer
    its own seconds)."""
    return min(work() for _ in range(repeat))


def reference_binary(given):
    if given:
        return given
    subprocess.run(
        ["cargo", "build", "--quiet", "--release", "-p", "strata-python", "--example", "reference"],
        cwd=ROOT,
        check=True,
    )
    return str(ROOT / "target" / "release" / "examples" / "reference")


def rust(reference, *args):
    done = subprocess.run([reference, *map(str, args)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def publish_all(path, t, v, chunk):
    """Python's publish + seal loop, batch for batch what the Rust reference does."""
    store = strata.Store.create(path, [STREAM])
    start = time.perf_counter()
    for position, at in enumerate(range(0, len(t), chunk), start=1):
        store.publish("s", position, "a", {"t": t[at : at + chunk], "v": v[at : at + chunk]})
        store.seal()
    seconds = time.perf_counter() - start
    store.close()
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10**7)
    parser.add_argument("--survey-rows", type=int, default=10**8)
    parser.add_argument("--budget", type=int, default=4000, help="points a survey answers (4 a bucket)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--reference", help="the Rust reference binary (built if not given)")
    parser.add_argument("--dir", help="where the stores go (a temporary folder if not given)")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()

    reference = reference_binary(args.reference)
    work = pathlib.Path(args.dir or tempfile.mkdtemp(prefix="strata-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    figures = {}

    # 1. publish + seal
    t, v = walk(args.rows, 1)
    t.tofile(work / "t.u64")
    v.tofile(work / "v.f64")
    chunk = min(CHUNK, args.rows)

    def python_publish():
        shutil.rmtree(work / "py", ignore_errors=True)
        return publish_all(work / "py", t, v, chunk)

    def rust_publish():
        shutil.rmtree(work / "rs", ignore_errors=True)
        return rust(reference, "publish", work / "rs", work / "t.u64", work / "v.f64", chunk)["seconds"]

    py_s, rs_s = best(args.repeat, python_publish), best(args.repeat, rust_publish)
    figures["publish"] = {"rows": args.rows, "python_s": py_s, "rust_s": rs_s, "ratio": rs_s / py_s}

    # 2. query to Arrow, over the store Python wrote
    def python_query():
        with strata.Store.open_read_only(work / "py") as store:
            start = time.perf_counter()
            table = store.query("s")
            seconds = time.perf_counter() - start
        assert table.num_rows == args.rows
        return seconds

    def rust_query():
        answer = rust(reference, "query", work / "py")
        assert answer["rows"] == args.rows
        return answer["seconds"]

    py_s, rs_s = best(args.repeat, python_query), best(args.repeat, rust_query)
    figures["query"] = {"rows": args.rows, "python_s": py_s, "rust_s": rs_s, "ratio": rs_s / py_s}
    del t, v

    # 3. survey against tsdownsample
    from tsdownsample import M4Downsampler

    n = args.survey_rows
    t, v = walk(n, 2)
    store_path = work / f"survey-{n}"
    if not (store_path / "DONE").exists():
        shutil.rmtree(store_path, ignore_errors=True)
        start = time.perf_counter()
        publish_all(store_path, t, v, CHUNK)
        with strata.Store.open(store_path) as store:
            store.compact()
        (store_path / "DONE").write_text("built\n")
        figures["survey_store_build_s"] = time.perf_counter() - start
    m4 = M4Downsampler()
    windows = [(0, n - 1)] + [(n // 3, n // 3 + n // 10**k) for k in (1, 2, 3, 4)]
    figures["survey"] = []
    with strata.Store.open_read_only(store_path) as store:
        for lo, hi in windows:
            inside = slice(lo, hi + 1)
            x, y = t[inside], v[inside]

            def strata_survey():
                start = time.perf_counter()
                answer = store.survey("s", "a", lo, hi, budget=args.budget)
                seconds = time.perf_counter() - start
                assert answer["v"]["count"].sum() >= hi - lo + 1
                return seconds

            def m4_survey():
                start = time.perf_counter()
                picked = m4.downsample(x, y, n_out=args.budget)
                seconds = time.perf_counter() - start
                assert len(picked) <= args.budget
                return seconds

            # The extremes agree: the survey's max over the window is numpy's (whole cells may
            # reach past a window's ends, so only the whole span is compared exactly).
            if (lo, hi) == (0, n - 1):
                answer = store.survey("s", "a", lo, hi, budget=args.budget)
                assert answer["v"]["max"].max() == y.max() and answer["v"]["min"].min() == y.min()
            s_s, m_s = best(args.repeat, strata_survey), best(args.repeat, m4_survey)
            figures["survey"].append(
                {"rows": hi - lo + 1, "strata_s": s_s, "tsdownsample_s": m_s, "speedup": m_s / s_s}
            )

    print(f"publish + seal of {args.rows:,} rows from numpy: Python {figures['publish']['python_s']:.3f} s, "
          f"Rust {figures['publish']['rust_s']:.3f} s -> {figures['publish']['ratio']:.2f}x Rust's rate (target >= 0.8x)")
    print(f"query of {args.rows:,} rows to a pyarrow Table: Python {figures['query']['python_s']:.3f} s, "
          f"Rust query_runs {figures['query']['rust_s']:.3f} s -> {figures['query']['ratio']:.2f}x Rust's rate (target >= 0.5x)")
    for row in figures["survey"]:
        print(f"survey of {row['rows']:,} rows, budget {args.budget}: strata {row['strata_s'] * 1e3:.2f} ms, "
              f"tsdownsample M4 {row['tsdownsample_s'] * 1e3:.2f} ms -> strata {row['speedup']:.2f}x the speed")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
