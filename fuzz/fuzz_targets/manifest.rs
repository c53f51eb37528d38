//! A whole manifest log from arbitrary bytes: parse, replay into a catalog, snapshot.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| strata_segment::fuzzing::manifest(bytes));
