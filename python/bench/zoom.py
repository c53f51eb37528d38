"""tsdownsample's M4 on the zoom windows `cargo bench --bench zoom` timed strata's survey on
(#50): the same rows, the same budget, one script run after the bench.

    cargo bench --bench zoom && python python/bench/zoom.py
    STRATA_ZOOM_ROWS=1000000 cargo bench --bench zoom && python python/bench/zoom.py --rows 1000000

It generates each track's rows as benches/zoom.rs does (SplitMix64 steps, the walk rounded to 3
decimals), checks two barriers of them against the store (read with strata's binding), times
`M4Downsampler().downsample` on each window's rows already in memory (one thread, `n_out` the
bench's budget, the best of --repeat), and prints per decade of window width strata's and
tsdownsample's p50 and max and the windows where strata was slower; then, over all windows, how
many strata was slower in, and how many of those hold 10^5 rows or more (#50's target: none).
"""

import argparse
import json
import pathlib
import time

import numpy as np

import strata

ROOT = pathlib.Path(__file__).resolve().parents[2]
STEP_US = 1_000
CHUNK = 1_000_000
BUDGET = 6_400
TRACKS = ["a", "b"]


def splitmix(x):
    """SplitMix64 of each of `x` (uint64), as benches/zoom.rs's `splitmix`."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def track_rows(track, rows):
    """Track `track`'s axis (µs) and values, as benches/zoom.rs's `walk` makes them: the
    running sum of uniform steps in [-0.5, 0.5), summed in order, rounded to 3 decimals."""
    i = np.arange(rows, dtype=np.uint64)
    steps = (splitmix((np.uint64(track) << np.uint64(56)) ^ i) >> np.uint64(11)).astype(np.float64)
    steps = steps * (1.0 / float(1 << 53)) - 0.5
    values = np.floor(np.cumsum(steps) * 1000.0 + 0.5) / 1000.0
    return i * np.uint64(STEP_US), values


def check(store, track, t, v, rows):
    """The first and the last barrier of `track` as the store holds them: the rows generated
    here are the rows the bench stored."""
    barriers = (rows + CHUNK - 1) // CHUNK
    for barrier in {0, barriers - 1}:
        position = 2 * barrier + track + 1
        got = store.query_numpy("probe", track=[TRACKS[track]], start=position, end=position)
        lo = barrier * CHUNK
        hi = min(lo + CHUNK, rows)
        assert np.array_equal(got["t"], t[lo:hi]), f"track {TRACKS[track]}'s axis differs"
        assert np.array_equal(got["v"], v[lo:hi]), f"track {TRACKS[track]}'s values differ"


def quantile(sorted_values, q):
    rank = min(max(int(np.ceil(len(sorted_values) * q)), 1), len(sorted_values))
    return sorted_values[rank - 1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=50_000_000, help="rows a track (the bench's STRATA_ZOOM_ROWS)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from tsdownsample import M4Downsampler

    folder = ROOT / "target" / f"bench-zoom-{args.rows}"
    windows = json.loads((folder / "windows.json").read_text())
    m4 = M4Downsampler()
    with strata.Store.open_read_only(folder / "store") as store:
        for track in range(len(TRACKS)):
            t, v = track_rows(track, args.rows)
            check(store, track, t, v, args.rows)
            for window in windows:
                if window["track"] != track:
                    continue
                x, y = t[window["first"] : window["last"] + 1], v[window["first"] : window["last"] + 1]

                def once():
                    began = time.perf_counter()
                    picked = m4.downsample(x, y, n_out=BUDGET)
                    took = time.perf_counter() - began
                    assert len(picked) <= BUDGET
                    return took

                window["tsdownsample_s"] = min(once() for _ in range(args.repeat))
            del t, v

    for window in windows:
        window["rows"] = window["last"] - window["first"] + 1
    print(f"zoom: {len(windows)} windows over 2 tracks of {args.rows:,} rows, budget {BUDGET}")
    print("| window (rows) | windows | strata p50 | strata max | tsdownsample p50 | tsdownsample max | strata slower |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    decade = 1_000
    while decade <= args.rows:
        inside = [w for w in windows if decade <= w["rows"] < decade * 10]
        if inside:
            s = sorted(w["strata_s"] for w in inside)
            m = sorted(w["tsdownsample_s"] for w in inside)
            slower = sum(w["strata_s"] > w["tsdownsample_s"] for w in inside)
            upper = f"10^{len(str(decade * 10)) - 1}" if decade * 10 <= args.rows else f"{args.rows:,}"
            print(
                f"| 10^{len(str(decade)) - 1}–{upper} | {len(inside)} | {quantile(s, 0.5) * 1e3:.2f} ms | "
                f"{s[-1] * 1e3:.2f} ms | {quantile(m, 0.5) * 1e3:.2f} ms | {m[-1] * 1e3:.2f} ms | {slower} |"
            )
        decade *= 10
    slower = [w for w in windows if w["strata_s"] > w["tsdownsample_s"]]
    wide = [w for w in slower if w["rows"] >= 100_000]
    ratios = sorted(w["strata_s"] / w["tsdownsample_s"] for w in windows)
    print(
        f"zoom: strata slower than tsdownsample in {len(slower)} of {len(windows)} windows, {len(wide)} of "
        f"them of 10^5 rows or more (target: none); strata's time over tsdownsample's: p50 "
        f"{quantile(ratios, 0.5):.2f}x, p99 {quantile(ratios, 0.99):.2f}x"
    )
    if wide:
        print(
            f"zoom: those of 10^5 rows or more: {min(w['rows'] for w in wide):,} to "
            f"{max(w['rows'] for w in wide):,} rows, answered at levels "
            f"{', '.join(str(level) for level in sorted({w['level'] for w in wide}))}"
        )


if __name__ == "__main__":
    main()
