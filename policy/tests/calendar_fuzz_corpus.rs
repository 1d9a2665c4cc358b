//! The seed corpus of the iCalendar fuzz target (`policy/fuzz/seeds/read_calendar`, and any
//! input the fuzzer found and that was added there) replayed on stable through the same check
//! the fuzz target runs (`fleetgate_policy::fuzz_check`): no panic, the counted budgets hold,
//! an accepted feed reads the same twice and as the lenient expansion does. The named seeds
//! also keep their expected outcome: a valid weekly feed is read, a truncated copy, an HTML
//! login page and the 253-byte FREQ=SECONDLY feed are refused with their reasons, and a weekly
//! rule from the year 1013 (what the fuzzer found slowest) is read within the step budget.

use std::path::PathBuf;

use fleetgate_policy::CalendarRefusal;
use fleetgate_policy::fuzz_check::check_read_calendar;

fn seeds() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/read_calendar");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_seed_corpus_passes_the_fuzz_check() {
    let seeds = seeds();
    assert!(
        seeds.len() >= 4,
        "{:?}",
        seeds.iter().map(|s| &s.0).collect::<Vec<_>>()
    );
    for (name, bytes) in &seeds {
        let read = std::panic::catch_unwind(|| check_read_calendar(bytes))
            .unwrap_or_else(|_| panic!("{name}: the fuzz check failed"));
        match name.as_str() {
            "valid-weekly.ics" => {
                let c = read.unwrap_or_else(|e| panic!("{name}: {e}"));
                // Mondays and Fridays of 2026 (one removed by EXDATE, one moved) and Christmas.
                assert_eq!(c.occurrences.len(), 103, "{name}");
                assert_eq!(c.events, 3, "{name}");
            }
            "truncated.ics" => assert!(
                matches!(read, Err(CalendarRefusal::Truncated { ref component, .. }) if component == "VEVENT"),
                "{name}: {read:?}"
            ),
            "html-login.ics" => assert_eq!(read.unwrap_err(), CalendarRefusal::Html, "{name}"),
            "secondly.ics" => assert!(
                matches!(read, Err(CalendarRefusal::TooFrequent { line: 9, .. })),
                "{name}: {read:?}"
            ),
            // Found by the fuzzer as a libFuzzer timeout (a weekly rule from a DATE in 1013:
            // about 53,000 steps, within the step budget; slow only under the sanitizer).
            "weekly-since-year-1013.ics" => {
                let c = read.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(c.expansion_steps > 50_000, "{name}: {}", c.expansion_steps);
            }
            _ => {}
        }
    }
}
