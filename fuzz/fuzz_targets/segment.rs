//! A segment from arbitrary bytes: open it and read every partition's columns and cells.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| strata_segment::fuzzing::segment(bytes));
