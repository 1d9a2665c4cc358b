//! `next_combined_change`: when a cluster's combined state (open only while every gate is
//! open) next changes — not the earliest transition of any gate — checked on the seed
//! scenarios and against a sweep over every gate's transitions.

mod support;

use chrono::{DateTime, Duration, Utc};
use fleetgate_policy::{CompiledGate, GateState, Override, next_combined_change};
use support::{gate, ovr, utc};

fn business_hours() -> CompiledGate {
    gate(
        "  default: closed\n  timeZone: Europe/Berlin\n  windows:\n    - {name: mon-to-thu, kind: allow, schedule: '0 8 * * MON', duration: 81h}\n",
    )
}

fn no_deploy_friday() -> CompiledGate {
    gate(
        "  default: open\n  timeZone: Europe/Berlin\n  windows:\n    - {name: weekend, kind: deny, schedule: '0 0 * * FRI', duration: 72h}\n",
    )
}

fn sre_approval() -> CompiledGate {
    gate("  default: closed\n")
}

fn next(gates: &[(&CompiledGate, &[Override])], at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let now: Vec<_> = gates.iter().map(|(g, o)| g.evaluate(at, o)).collect();
    next_combined_change(at, &now, |i, t| gates[i].0.evaluate(t, gates[i].1))
}

/// 2026-11-26 is a Thursday; Berlin is UTC+1.
#[test]
fn a_gate_closed_for_good_means_no_next_change() {
    let (bh, sre) = (business_hours(), sre_approval());
    let at = utc("2026-11-26 12:00");
    // business-hours closes Thu 17:00 Berlin, but sre-approval keeps the cluster closed.
    assert_eq!(
        bh.evaluate(at, &[]).next_transition,
        Some(utc("2026-11-26 16:00"))
    );
    assert_eq!(next(&[(&bh, &[]), (&sre, &[])], at), None);
}

#[test]
fn an_sre_opening_ends_when_either_gate_closes() {
    let (bh, sre) = (business_hours(), sre_approval());
    let at = utc("2026-11-26 12:00");
    let open = [ovr(
        "o1",
        GateState::Open,
        "2026-11-26 11:00",
        Some("2026-11-26 13:00"),
        "2026-11-26 11:00",
    )];
    assert_eq!(
        next(&[(&bh, &[]), (&sre, &open)], at),
        Some(utc("2026-11-26 13:00"))
    );
    let long = [ovr(
        "o1",
        GateState::Open,
        "2026-11-26 11:00",
        Some("2026-11-27 13:00"),
        "2026-11-26 11:00",
    )];
    assert_eq!(
        next(&[(&bh, &[]), (&sre, &long)], at),
        Some(utc("2026-11-26 16:00"))
    );
    // Closed tonight, an opening already scheduled for Monday noon: the cluster opens then.
    let monday = [ovr(
        "o2",
        GateState::Open,
        "2026-11-30 11:00",
        None,
        "2026-11-26 11:00",
    )];
    assert_eq!(
        next(&[(&bh, &[]), (&sre, &monday)], utc("2026-11-26 20:00")),
        Some(utc("2026-11-30 11:00"))
    );
}

#[test]
fn closed_by_one_gate_opens_when_all_are_open_together() {
    let (bh, ndf) = (business_hours(), no_deploy_friday());
    let gates: [(&CompiledGate, &[Override]); 2] = [(&bh, &[]), (&ndf, &[])];
    // Wed noon: both open; business-hours closes first (Thu 17:00 Berlin).
    assert_eq!(
        next(&gates, utc("2026-11-25 11:00")),
        Some(utc("2026-11-26 16:00"))
    );
    // Thu evening: no-deploy-friday changes Fri 00:00 and Mon 00:00, but the cluster stays
    // closed until business-hours opens Mon 08:00 Berlin.
    assert_eq!(
        next(&gates, utc("2026-11-26 18:00")),
        Some(utc("2026-11-30 07:00"))
    );
}

#[test]
fn no_gates_or_gates_that_never_change_have_no_next_change() {
    assert_eq!(
        next_combined_change(utc("2026-11-26 12:00"), &[], |_, _| unreachable!()),
        None
    );
    let open = gate("  default: open\n");
    assert_eq!(next(&[(&open, &[])], utc("2026-11-26 12:00")), None);
}

#[test]
fn gates_taking_turns_never_open_together() {
    let even = gate(
        "  default: closed\n  windows:\n    - {name: w, kind: allow, schedule: '0 */2 * * *', duration: 1h}\n",
    );
    let odd = gate(
        "  default: closed\n  windows:\n    - {name: w, kind: allow, schedule: '0 1-23/2 * * *', duration: 1h}\n",
    );
    assert_eq!(
        next(&[(&even, &[]), (&odd, &[])], utc("2026-11-26 12:30")),
        None
    );
}

/// Against a sweep: merge every gate's transitions over four weeks and find the first instant
/// the all-open state flips.
#[test]
fn agrees_with_a_sweep_over_every_gates_transitions() {
    let gates = [
        business_hours(),
        no_deploy_friday(),
        gate(
            "  default: open\n  timeZone: America/New_York\n  windows:\n    - {name: lunch, kind: deny, schedule: '0 12 * * MON-FRI', duration: 90m}\n",
        ),
        gate(
            "  default: closed\n  windows:\n    - {name: nights, kind: allow, schedule: '0 20 * * *', duration: 14h}\n",
        ),
    ];
    let combos: [&[usize]; 6] = [
        &[0, 1],
        &[0, 2],
        &[1, 3],
        &[0, 1, 2],
        &[0, 1, 2, 3],
        &[2, 3],
    ];
    let start = utc("2026-11-20 00:00");
    for combo in combos {
        for step in 0..(21 * 24 / 5) {
            let at = start + Duration::hours(5 * step);
            let chosen: Vec<(&CompiledGate, &[Override])> =
                combo.iter().map(|&i| (&gates[i], &[][..])).collect();
            let to = at + Duration::days(28);
            let mut events: Vec<(DateTime<Utc>, usize, GateState)> = Vec::new();
            let mut states: Vec<GateState> = Vec::new();
            for (i, (g, o)) in chosen.iter().enumerate() {
                states.push(g.evaluate(at, o).state);
                events.extend(
                    g.transitions(at, to, o)
                        .into_iter()
                        .map(|t| (t.at, i, t.state)),
                );
            }
            events.sort_by_key(|e| e.0);
            let open = |s: &[GateState]| s.iter().all(|s| *s == GateState::Open);
            let initial = open(&states);
            let mut expected = None;
            let mut k = 0;
            while k < events.len() {
                let t = events[k].0;
                while k < events.len() && events[k].0 == t {
                    states[events[k].1] = events[k].2;
                    k += 1;
                }
                if open(&states) != initial {
                    expected = Some(t);
                    break;
                }
            }
            let got = next(&chosen, at).filter(|t| *t <= to);
            assert_eq!(got, expected, "gates {combo:?} at {at}");
        }
    }
}
