//! The size-tiered compaction policy: which of a partition's newest segments a step merges,
//! within the bounds `Config` sets (files, inputs, bytes a step reads). Pure functions of the
//! segments' sizes; `compact.rs` picks with them (docs/compaction.md).

/// The bounds the policy works within, from the store's `Config`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PolicyBounds {
    pub(crate) files_max: usize,
    pub(crate) inputs_min: usize,
    pub(crate) inputs_max: usize,
    pub(crate) step_bytes_max: u64,
}

impl PolicyBounds {
    pub(crate) fn of(config: &crate::Config) -> PolicyBounds {
        let inputs_max = config.compact_inputs_max.max(2);
        PolicyBounds {
            files_max: config.compact_files_max,
            inputs_min: config.compact_inputs_min.clamp(2, inputs_max),
            inputs_max,
            step_bytes_max: config.compact_step_bytes_max,
        }
    }
}

/// Rule 1's slack: an older segment joins a run while it is at most `1 + 1 / SIZE_SLACK` times
/// what the run gathered.
pub(crate) const SIZE_SLACK: u64 = 4;

/// The policy: which of a partition's segments one step merges, given the sizes
/// (bytes of the partition) of its mergeable tail, oldest first, and how many live raw segments
/// it has in all. 0: nothing to merge; otherwise at least 2.
///
/// Everything is decided within the **window**: the newest segments whose bytes together are
/// at most `step_bytes_max`, so a step never reads more than that. Older segments are left
/// alone while the window has work (rule 4 reaches them once it has none).
///
/// 1. Size-tiered, newest first (as RocksDB's universal compaction): walking back from the
///    newest segment, an older one joins the run while it is no bigger than everything
///    gathered so far and a quarter more (`SIZE_SLACK`: packed barriers of equal rows differ
///    in bytes). A run of at least `inputs_min` merges. Segments so merged grow by at least
///    1.8× each time they are rewritten, so a row is rewritten O(log rows) times and a
///    partition holds O(log rows) tiers of fewer than `inputs_min` similar sizes.
/// 2. Fill: once the window holds at least half the cap, and its oldest segment is no bigger
///    than the rest of it, the window merges whole (the newest `inputs_max` of it, if longer).
///    So a segment the window leaves behind is big: it left because a barrier of `b` bytes
///    took the window over the cap, and had it been under `(cap - b) / 2` it would have been
///    no bigger than the rest of a window of at least half the cap, and filled. A partition
///    thus leaves about `2 × its bytes / step_bytes_max` segments behind at most. A fill at
///    least doubles its oldest segment, so it rewrites a row at most a few times, and an
///    output smaller than its inputs is not filled again until as many bytes follow it.
/// 3. Count: a partition with more than `files_max` live segments, not counting those the cap
///    leaves behind, merges its newest (smallest) ones, as many as bring it to the bound.
///    Counting those would make every barrier rewrite the newest segment as it grows to the
///    cap, a write amplification of about `step_bytes_max / barrier bytes`.
///
/// 4. Backlog: a window none of these merge is **exhausted**, and the policy goes on behind it,
///    with the segments the window leaves behind as the mergeable ones and the window's as
///    later ones (counted among the live). So a backlog of small segments behind a segment the
///    cap stops at is merged too, window by window, oldest ones last, each window's as above:
///    a store compacted from any history ends with every exhausted window holding one segment
///    or a tier of fewer than `inputs_min` growing ones, and the count rule's bound from the
///    oldest window on.
///
/// Answers the run to merge as a range of `sizes`: empty if none, otherwise at least 2 long,
/// at most `inputs_max`, at most `step_bytes_max` bytes, which bound a step. A run that is not
/// a suffix keeps, for each cell it shares with a later segment, its inputs' partial cells as a
/// chain, which a read folds exactly as it folded them apart (`CHAINS_VERSION`); any other cell
/// a read's right fold leaves the same bit for bit.
pub(crate) fn plan_merge(
    sizes: &[u64],
    n_live: usize,
    bounds: PolicyBounds,
) -> std::ops::Range<usize> {
    debug_assert!(
        sizes.len() <= n_live,
        "the tail is part of the live segments"
    );
    let mut end = sizes.len();
    while end >= 2 {
        match plan_window(&sizes[..end], n_live, bounds) {
            Ok(n_run) => return end - n_run..end,
            Err(n_left) => end = n_left,
        }
    }
    0..0
}

/// Rules 1 to 3 over the window at the end of `sizes`: `Ok(n)` merges its newest `n`
/// segments; `Err(n_left)` when it is exhausted, with the `n_left` segments it leaves behind.
pub(crate) fn plan_window(
    sizes: &[u64],
    n_live: usize,
    bounds: PolicyBounds,
) -> Result<usize, usize> {
    let mut window_bytes = 0u64;
    let mut n_window = 0;
    for &size in sizes.iter().rev() {
        match window_bytes.checked_add(size) {
            Some(bytes) if bytes <= bounds.step_bytes_max => {
                window_bytes = bytes;
                n_window += 1;
            }
            _ => break,
        }
    }
    // At least the newest segment leaves, even one bigger than the cap.
    let n_left = sizes.len() - n_window.max(1);
    let window = &sizes[sizes.len() - n_window..];
    let n_max = n_window.min(bounds.inputs_max);
    let (Some((&newest, older)), true) = (window.split_last(), n_max >= 2) else {
        return Err(n_left);
    };
    let mut gathered = newest;
    let mut n_run = 1;
    for &size in older.iter().rev() {
        // A quarter's slack (RocksDB's universal compaction has `size_ratio` for the same):
        // packed barriers of equal rows differ in bytes by their data, and without it a run
        // of them would stop at the first that packed a little worse than the newest.
        if n_run == n_max || size > gathered.saturating_add(gathered / SIZE_SLACK) {
            break;
        }
        gathered += size; // within the window: no overflow
        n_run += 1;
    }
    if n_run >= bounds.inputs_min {
        return Ok(n_run);
    }
    if window_bytes >= bounds.step_bytes_max / 2 && window[0] <= window_bytes - window[0] {
        return Ok(n_max);
    }
    let n_over = n_live.saturating_sub(bounds.files_max.saturating_add(n_left));
    if n_over > 0 {
        return Ok((n_over + 1).min(n_max));
    }
    Err(n_left)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: PolicyBounds = PolicyBounds {
        files_max: 16,
        inputs_min: 4,
        inputs_max: 16,
        step_bytes_max: u64::MAX,
    };

    /// How many of the newest segments the plan merges, checking that its run is a suffix
    /// (or nothing).
    fn newest(sizes: &[u64], n_live: usize, bounds: PolicyBounds) -> usize {
        let run = plan_merge(sizes, n_live, bounds);
        assert!(
            run.is_empty() || run.end == sizes.len(),
            "{run:?} of {sizes:?}"
        );
        run.len()
    }

    /// One step as a store takes it: the planned run replaced by one segment in its place.
    /// The bytes it read, or `None` when the plan merges nothing.
    fn step(sizes: &mut Vec<u64>, bounds: PolicyBounds) -> Option<u64> {
        let run = plan_merge(sizes, sizes.len(), bounds);
        if run.is_empty() {
            return None;
        }
        assert!(run.len() >= 2 && run.len() <= bounds.inputs_max, "{run:?}");
        let merged: u64 = sizes.drain(run.clone()).sum();
        sizes.insert(run.start, merged);
        Some(merged)
    }

    #[test]
    fn a_run_of_similar_newest_segments_merges_and_stops_at_a_bigger_one() {
        assert_eq!(newest(&[1000, 1, 1, 1, 1], 5, BOUNDS), 4);
        // Three are too few to merge while under the file bound.
        assert_eq!(newest(&[1000, 1, 1, 1], 4, BOUNDS), 0);
        // An older segment no bigger than everything newer and a quarter more joins the run.
        assert_eq!(newest(&[4, 1, 1, 1, 1], 5, BOUNDS), 5);
        assert_eq!(newest(&[5, 1, 1, 1, 1], 5, BOUNDS), 5);
        assert_eq!(newest(&[6, 1, 1, 1, 1], 5, BOUNDS), 4);
        // Barriers that packed a little differently still make a run.
        // Barriers that packed a little differently still make a run (without the slack the
        // newest's 97 would stop at the 104 before it).
        assert_eq!(newest(&[100, 98, 104, 97], 4, BOUNDS), 4);
        assert_eq!(newest(&[], 0, BOUNDS), 0);
        assert_eq!(newest(&[7], 1, BOUNDS), 0);
    }

    #[test]
    fn a_step_merges_at_most_inputs_max() {
        let sizes = vec![1; 40];
        assert_eq!(newest(&sizes, 40, BOUNDS), 16);
    }

    #[test]
    fn over_the_file_bound_the_newest_merge_back_down_to_it() {
        // Sizes that double going back: no tiered run, and 20 files.
        let sizes: Vec<u64> = (0..20).rev().map(|k| 1 << k).collect();
        assert_eq!(newest(&sizes, 20, BOUNDS), 5);
        // Only the mergeable tail can be merged, however far over the bound.
        assert_eq!(newest(&sizes[18..], 20, BOUNDS), 2);
        assert_eq!(newest(&sizes[19..], 20, BOUNDS), 0);
        assert_eq!(newest(&sizes[..16], 16, BOUNDS), 0);
    }

    /// The policy's laws over a long run of equal barriers with steps after each, as `Served`
    /// takes them: the files stay under the bound and O(log barriers), and each barrier's bytes
    /// are rewritten O(log barriers) times.
    #[test]
    fn under_continuing_barriers_files_stay_bounded_and_rewrites_logarithmic() {
        for bounds in [
            BOUNDS,
            PolicyBounds {
                inputs_min: 2,
                ..BOUNDS
            },
            PolicyBounds {
                files_max: 1000,
                ..BOUNDS
            },
        ] {
            let n_barriers = 20_000u64;
            let mut sizes: Vec<u64> = Vec::new();
            let (mut written, mut peak) = (0u64, 0);
            for _ in 0..n_barriers {
                sizes.push(1);
                for _ in 0..4 {
                    let Some(merged) = step(&mut sizes, bounds) else {
                        break;
                    };
                    written += merged;
                }
                peak = peak.max(sizes.len());
            }
            // log2(20,000) is 14.3.
            assert!(peak <= 16.min(bounds.files_max), "{bounds:?}: {peak} files");
            assert!(written <= 15 * n_barriers, "{bounds:?}: wrote {written}");
        }
    }

    #[test]
    fn a_step_reads_at_most_the_cap_and_leaves_older_segments_alone() {
        let capped = |step_bytes_max| PolicyBounds {
            step_bytes_max,
            ..BOUNDS
        };
        // Similar segments merge only as many as fit the cap.
        assert_eq!(newest(&[1; 10], 10, capped(5)), 5);
        assert_eq!(newest(&[1; 10], 10, capped(3)), 3);
        // A segment bigger than the cap is never an input, nor anything older than it.
        assert_eq!(newest(&[1, 1, 1, 100, 1], 5, capped(50)), 0);
        assert_eq!(newest(&[100, 1, 1, 1, 1], 5, capped(50)), 4);
        // Older tiers over the cap are left alone and do not count against the file bound, so
        // the newest small segments are not rewritten into the biggest one barrier by barrier.
        let mut sizes = vec![40; 20];
        sizes.extend([1, 1]);
        assert_eq!(newest(&sizes, 22, capped(50)), 0);
        // Within the window the count rule still holds the bound: sizes that double going
        // back form no tiered run, and the oldest of the window (16) is bigger than the rest.
        let mut sizes = vec![40; 20];
        sizes.extend([16, 8, 4, 2, 1]);
        let narrow = PolicyBounds {
            files_max: 2,
            ..capped(50)
        };
        assert_eq!(newest(&sizes, 25, narrow), 4);
        assert_eq!(newest(&sizes, 25, capped(50)), 0);
        // Fill: a window of at least half the cap whose oldest is no bigger than the rest
        // merges whole; one whose oldest is bigger waits (it is left behind big).
        assert_eq!(newest(&[9, 10, 8, 7], 4, capped(40)), 4);
        assert_eq!(newest(&[30, 10, 8], 3, capped(60)), 0);
        // A cap of one byte merges nothing.
        assert_eq!(newest(&[1; 10], 10, capped(1)), 0);
    }

    /// Under a byte cap, over long runs of barriers (equal, and of varying sizes, with one
    /// step or four after each): no step reads more than the cap, the files stay within
    /// `files_max` plus two per cap's worth of the partition's bytes (plus one), a quiet
    /// partition ends there too, and the bytes written stay a small multiple of those sealed.
    #[test]
    fn under_a_byte_cap_steps_stay_under_it_and_files_within_two_per_cap() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for (cap, files_max, inputs_max, steps, varying) in [
            (64, 16, 16, 4, false),
            (100, 16, 16, 4, false),
            (1000, 16, 16, 4, false),
            (50, 3, 4, 1, true),
            (300, 8, 8, 2, true),
            (5000, 16, 16, 1, true),
        ] {
            let bounds = PolicyBounds {
                files_max,
                inputs_min: 4.min(inputs_max),
                inputs_max,
                step_bytes_max: cap,
            };
            let mut sizes: Vec<u64> = Vec::new();
            let (mut sealed, mut written, mut step_max) = (0u64, 0u64, 0u64);
            let files_bound =
                |sealed: u64| files_max + usize::try_from(2 * sealed / cap).unwrap() + 1;
            let step = |sizes: &mut Vec<u64>| step(sizes, bounds);
            for _ in 0..8_000 {
                let barrier = if varying { 1 + next() % 20 } else { 1 };
                sizes.push(barrier);
                sealed += barrier;
                for _ in 0..steps {
                    let Some(read) = step(&mut sizes) else {
                        break;
                    };
                    written += read;
                    step_max = step_max.max(read);
                }
                assert!(
                    sizes.len() <= files_bound(sealed),
                    "cap {cap}: {} files for {sealed} bytes",
                    sizes.len()
                );
            }
            while let Some(read) = step(&mut sizes) {
                written += read;
                step_max = step_max.max(read);
            }
            assert!(step_max <= cap, "cap {cap}: a step read {step_max}");
            assert!(
                step_max > cap / 2,
                "cap {cap}: the cap was never approached"
            );
            assert!(
                sizes.len() <= files_bound(sealed),
                "cap {cap}: {} quiet",
                sizes.len()
            );
            assert!(
                written <= 8 * sealed,
                "cap {cap}: wrote {written} for {sealed}"
            );
        }
    }

    /// A backlog (many small segments sealed while nothing compacted) is merged under the cap
    /// all the way back: once the newest window is one segment the cap stops at, the policy
    /// merges the segments behind it, window by window, as non-suffix runs. It ends within
    /// the same bound as continuing barriers, every step under the cap.
    #[test]
    fn a_backlog_is_merged_under_the_cap_all_the_way_back() {
        for (n, size, cap) in [
            (400u64, 1u64, 40u64),
            (1000, 3, 100),
            (1000, 1, 300),
            (500, 7, 64),
        ] {
            let bounds = PolicyBounds {
                step_bytes_max: cap,
                ..BOUNDS
            };
            let mut sizes = vec![size; usize::try_from(n).unwrap()];
            let (mut steps, mut not_suffix) = (0, 0);
            loop {
                let run = plan_merge(&sizes, sizes.len(), bounds);
                not_suffix += usize::from(!run.is_empty() && run.end < sizes.len());
                let Some(read) = step(&mut sizes, bounds) else {
                    break;
                };
                assert!(read <= cap, "read {read} under a cap of {cap}");
                steps += 1;
                assert!(steps < 10_000, "no end");
            }
            let bound = 16 + usize::try_from(2 * n * size / cap).unwrap() + 1;
            assert!(sizes.len() <= bound, "{n}x{size} under {cap}: {sizes:?}");
            assert!(not_suffix > 0, "{n}x{size} under {cap}: every run a suffix");
            assert_eq!(sizes.iter().sum::<u64>(), n * size);
            eprintln!(
                "{n} x {size} under a cap of {cap}: {} files (bound {bound}) in {steps} steps, {not_suffix} behind the newest",
                sizes.len()
            );
        }
        assert!(
            {
                let mut sizes = vec![1u64; 400];
                while step(&mut sizes, BOUNDS).is_some() {}
                sizes.len()
            } <= 16
        );
    }
}
