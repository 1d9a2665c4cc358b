//! Arbitrary bytes as a calendar feed: `read_calendar` never panics, stays within its counted
//! budgets, and reads an accepted feed the same twice and as the lenient expansion does
//! (`fleetgate_policy::fuzz_check`, shared with the stable replay of the seed corpus).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = fleetgate_policy::fuzz_check::check_read_calendar(bytes);
});
