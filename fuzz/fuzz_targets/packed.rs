//! A packed block's payload from arbitrary bytes, straight to the table checks and the pco
//! decoders (`strata_segment::fuzzing::packed` says how the bytes are read).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| strata_segment::fuzzing::packed(bytes));
