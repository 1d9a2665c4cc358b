//! How long a year of transitions takes for a gate with five windows (cron, rrule and dated, in
//! a DST zone), and a single evaluation with its next transition. The target is well under 10 ms
//! for the year; the figure is printed before criterion's own statistics.

use std::hint::black_box;
use std::time::Instant;

use chrono::{TimeZone, Utc};
use criterion::{Criterion, criterion_group, criterion_main};
use fleetgate_policy::{CompiledGate, GateState, Override, parse_gate};

const GATE: &str = r#"
apiVersion: fleetgate.io/v1
kind: Gate
metadata: {name: bench}
spec:
  clusters: {selector: {}}
  default: closed
  timeZone: Europe/Berlin
  windows:
    - {name: weekdays, kind: allow, schedule: "0 8 * * MON", duration: 81h}
    - {name: nightly, kind: allow, schedule: "30 1 * * *", duration: 2h}
    - {name: patch-tuesday, kind: allow, rrule: "FREQ=MONTHLY;BYDAY=2TU", dtstart: "2026-01-01T22:00:00", duration: 4h}
    - {name: no-deploy-friday, kind: deny, schedule: "0 0 * * FRI", duration: 72h}
    - {name: xmas, kind: deny, start: "2026-12-20T00:00:00", end: "2027-01-04T00:00:00"}
"#;

fn gate() -> CompiledGate {
    parse_gate(GATE)
        .and_then(|g| g.compile())
        .unwrap_or_else(|e| panic!("bench gate: {e}"))
}

fn bench(c: &mut Criterion) {
    let gate = gate();
    let from = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let to = Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap();
    let overrides = vec![Override {
        id: "o1".into(),
        gate: "bench".into(),
        state: GateState::Open,
        starts_at: Utc.with_ymd_and_hms(2026, 6, 5, 10, 0, 0).unwrap(),
        expires_at: Some(Utc.with_ymd_and_hms(2026, 6, 5, 11, 0, 0).unwrap()),
        created_at: Utc.with_ymd_and_hms(2026, 6, 5, 10, 0, 0).unwrap(),
        actor: "sre".into(),
        reason: "bench".into(),
    }];

    // The headline figure, measured plainly so it shows without reading criterion's output.
    let runs = 50;
    let started = Instant::now();
    let mut count = 0;
    for _ in 0..runs {
        count = black_box(gate.transitions(from, to, &overrides)).len();
    }
    let per_year = started.elapsed() / runs;
    println!(
        "year of transitions, 5-window gate: {count} transitions in {per_year:?} per year (mean of {runs})"
    );

    c.bench_function("transitions/one-year-5-windows", |b| {
        b.iter(|| gate.transitions(black_box(from), black_box(to), &overrides))
    });
    let at = Utc.with_ymd_and_hms(2026, 11, 24, 10, 0, 0).unwrap();
    c.bench_function("evaluate/with-next-transition", |b| {
        b.iter(|| gate.evaluate(black_box(at), &overrides))
    });

    // The worst shape for look-ahead: a window that fires every minute and is always active.
    let dense = parse_gate(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: dense}\nspec:\n  clusters: {selector: {}}\n  windows:\n    - {name: all, kind: deny, schedule: '* * * * *', duration: 1h}\n",
    )
    .and_then(|g| g.compile())
    .unwrap_or_else(|e| panic!("dense gate: {e}"));
    c.bench_function("evaluate/always-active-minute-cron", |b| {
        b.iter(|| dense.evaluate(black_box(at), &[]))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
