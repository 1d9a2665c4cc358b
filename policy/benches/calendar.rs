//! `gate preview` of a year of a 200-event calendar feed: parsing and expanding the iCalendar
//! text, compiling the gate, and listing a year of transitions (what the CLI does), and the
//! preview alone on a compiled gate (what the hub and spoke repeat). The target is well under
//! 10 ms; the figures are printed before criterion's own statistics.

use std::fmt::Write;
use std::hint::black_box;
use std::time::Instant;

use chrono::{TimeZone, Utc};
use chrono_tz::Tz;
use criterion::{Criterion, criterion_group, criterion_main};
use fleetgate_policy::{Calendars, expand_ics, parse_gate};

/// 200 VEVENTs as calendar programs write them: 120 timed one-off events in a VTIMEZONE zone,
/// 40 all-day (some multi-day) events, 30 weekly series with an EXDATE, 10 monthly series.
fn feed() -> String {
    let mut ics = String::from(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//bench//EN\r\nBEGIN:VTIMEZONE\r\nTZID:W. Europe Standard Time\r\nBEGIN:STANDARD\r\nDTSTART:16010101T030000\r\nTZOFFSETFROM:+0200\r\nTZOFFSETTO:+0100\r\nRRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=10\r\nEND:STANDARD\r\nBEGIN:DAYLIGHT\r\nDTSTART:16010101T020000\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\nRRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=3\r\nEND:DAYLIGHT\r\nEND:VTIMEZONE\r\n",
    );
    for i in 0..120u32 {
        let month = 1 + i % 12;
        let day = 1 + (i * 7) % 28;
        let hour = 8 + i % 10;
        let _ = write!(
            ics,
            "BEGIN:VEVENT\r\nUID:one-{i}\r\nSUMMARY:Change freeze {i}\r\nDTSTART;TZID=W. Europe Standard Time:2026{month:02}{day:02}T{hour:02}0000\r\nDTEND;TZID=W. Europe Standard Time:2026{month:02}{day:02}T{:02}3000\r\nEND:VEVENT\r\n",
            hour + 2
        );
    }
    for i in 0..40u32 {
        let month = 1 + i % 12;
        let day = 1 + (i * 5) % 25;
        let _ = write!(
            ics,
            "BEGIN:VEVENT\r\nUID:day-{i}\r\nSUMMARY:Holiday {i}\r\nDTSTART;VALUE=DATE:2026{month:02}{day:02}\r\nDTEND;VALUE=DATE:2026{month:02}{:02}\r\nEND:VEVENT\r\n",
            day + 1 + i % 3
        );
    }
    for i in 0..30u32 {
        let day = ["MO", "TU", "WE", "TH", "FR"][(i % 5) as usize];
        let _ = write!(
            ics,
            "BEGIN:VEVENT\r\nUID:weekly-{i}\r\nSUMMARY:Weekly maintenance {i}\r\nDTSTART;TZID=Europe/Berlin:20250106T{:02}0000\r\nDURATION:PT1H\r\nRRULE:FREQ=WEEKLY;BYDAY={day}\r\nEXDATE;TZID=Europe/Berlin:20261222T{:02}0000\r\nEND:VEVENT\r\n",
            6 + i % 12,
            6 + i % 12
        );
    }
    for i in 0..10u32 {
        let _ = write!(
            ics,
            "BEGIN:VEVENT\r\nUID:monthly-{i}\r\nSUMMARY:Patch Tuesday {i}\r\nDTSTART;TZID=America/New_York:20250114T1{i}0000\r\nDTEND;TZID=America/New_York:20250114T1{i}3000\r\nRRULE:FREQ=MONTHLY;BYDAY=2TU\r\nEND:VEVENT\r\n"
        );
    }
    ics.push_str("END:VCALENDAR\r\n");
    ics
}

fn manifest(ics: &str) -> String {
    let mut m = String::from(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: bench}\nspec:\n  clusters: {selector: {}}\n  timeZone: Europe/Berlin\n  windows:\n    - name: feed\n      kind: deny\n      calendar:\n        ics: |\n",
    );
    for line in ics.lines() {
        let _ = writeln!(m, "          {}", line.trim_end_matches('\r'));
    }
    m
}

fn bench(c: &mut Criterion) {
    let text = manifest(&feed());
    let from = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let to = Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap();
    let calendars = Calendars::at(from).covering(from, to);
    let preview = || {
        let gate = parse_gate(&text).and_then(|g| g.compile_with(&calendars));
        let gate = gate.unwrap_or_else(|e| panic!("bench gate: {e}"));
        gate.preview(from, to, &[])
    };

    // CPU time of this thread (Linux schedstat), not wall time: the machine is shared, and
    // wall time shows other people's builds. Mean over 31 runs.
    let per_run = |f: &mut dyn FnMut()| {
        let cpu = || -> Option<u64> {
            let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
            s.split_whitespace().next()?.parse().ok()
        };
        let (cpu0, wall0) = (cpu(), Instant::now());
        for _ in 0..31 {
            f();
        }
        match (cpu0, cpu()) {
            (Some(a), Some(b)) => std::time::Duration::from_nanos((b - a) / 31),
            _ => wall0.elapsed() / 31,
        }
    };
    let ics = feed();
    let mut count = 0;
    let whole = per_run(&mut || count = black_box(preview()).transitions.len());
    let parse = per_run(&mut || {
        black_box(parse_gate(&text).ok());
    });
    let expand = per_run(&mut || {
        black_box(expand_ics(&ics, Tz::Europe__Berlin, None, calendars.from, calendars.to).ok());
    });
    let compiled = parse_gate(&text)
        .and_then(|g| g.compile_with(&calendars))
        .unwrap_or_else(|e| panic!("bench gate: {e}"));
    let alone = per_run(&mut || {
        black_box(compiled.preview(from, to, &[]));
    });
    println!(
        "gate preview, a year of a 200-event feed ({count} transitions), CPU time per run, mean of 31: whole {whole:?} = YAML {parse:?} + iCalendar parse and expansion {expand:?} + preview {alone:?}"
    );

    c.bench_function("calendar/parse-expand-preview-year-200-events", |b| {
        b.iter(preview)
    });
    c.bench_function("calendar/preview-year-compiled-200-events", |b| {
        b.iter(|| compiled.preview(black_box(from), black_box(to), &[]))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
