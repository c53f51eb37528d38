//! A segment from arbitrary bytes, resealed and claimed by a store's manifest, then read through
//! the engine: query, survey, level folds and percentiles (see `strata_engine::fuzzing`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| strata_engine::fuzzing::reads(bytes));
