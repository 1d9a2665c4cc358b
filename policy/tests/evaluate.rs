//! The evaluation rule (override › deny › allow › default), window boundaries, reasons, next
//! transitions, overrides, previews and the multi-gate combination.

mod support;

use fleetgate_policy::GateState::{Closed, Open};
use fleetgate_policy::{Evaluation, combine};
use support::{changes, gate, ovr, utc};

/// Allow Mon 08:00 + 81h, deny Fri 00:00 + 72h, UTC, default closed.
fn week() -> fleetgate_policy::CompiledGate {
    gate(
        "  default: closed\n  windows:\n    - {name: weekdays, kind: allow, schedule: '0 8 * * MON', duration: 81h}\n    - {name: friday, kind: deny, schedule: '0 0 * * FRI', duration: 72h}\n    - {name: tuesday-all-day, kind: deny, schedule: '0 12 * * TUE', duration: 1h}\n",
    )
}

#[test]
fn precedence_table() {
    let g = week();
    // 2026-11-23 is a Monday.
    let cases: &[(&str, fleetgate_policy::GateState, &str)] = &[
        ("2026-11-23 07:59", Closed, "default (closed)"),
        (
            "2026-11-23 08:00",
            Open,
            "allow window 'weekdays' until Thu 2026-11-26 17:00 UTC",
        ),
        (
            "2026-11-24 11:59",
            Open,
            "allow window 'weekdays' until Thu 2026-11-26 17:00 UTC",
        ),
        (
            "2026-11-24 12:00",
            Closed,
            "deny window 'tuesday-all-day' until 13:00 UTC",
        ),
        (
            "2026-11-24 12:59",
            Closed,
            "deny window 'tuesday-all-day' until 13:00 UTC",
        ),
        (
            "2026-11-24 13:00",
            Open,
            "allow window 'weekdays' until Thu 2026-11-26 17:00 UTC",
        ),
        (
            "2026-11-26 16:59",
            Open,
            "allow window 'weekdays' until 17:00 UTC",
        ),
        ("2026-11-26 17:00", Closed, "default (closed)"),
        (
            "2026-11-27 00:00",
            Closed,
            "deny window 'friday' until Mon 2026-11-30 00:00 UTC",
        ),
        ("2026-11-30 00:00", Closed, "default (closed)"),
    ];
    for (at, state, reason) in cases {
        let e = g.evaluate(utc(at), &[]);
        assert_eq!((e.state, e.reason.as_str()), (*state, *reason), "at {at}");
    }
}

#[test]
fn next_transition_is_the_next_state_change() {
    let g = week();
    let next = |at: &str| g.evaluate(utc(at), &[]).next_transition;
    assert_eq!(next("2026-11-23 07:00"), Some(utc("2026-11-23 08:00")));
    assert_eq!(next("2026-11-23 08:00"), Some(utc("2026-11-24 12:00")));
    // Deny Fri–Mon then default closed: no change at Mon 00:00, next is Mon 08:00.
    assert_eq!(next("2026-11-27 10:00"), Some(utc("2026-11-30 08:00")));
    // No windows: never changes.
    let g = gate("  default: open\n");
    assert_eq!(
        g.evaluate(utc("2026-11-23 07:00"), &[]),
        Evaluation {
            state: Open,
            reason: "default (open)".into(),
            next_transition: None
        }
    );
    // A dated window years ahead is still found.
    let g =
        gate("  windows:\n    - {name: far, kind: deny, start: '2031-01-01', end: '2031-01-02'}\n");
    assert_eq!(
        g.evaluate(utc("2026-11-23 07:00"), &[]).next_transition,
        Some(utc("2031-01-01 00:00"))
    );
    // Leap-day windows: the next is up to four years away.
    let g =
        gate("  windows:\n    - {name: leap, kind: deny, schedule: '0 0 29 2 *', duration: 1h}\n");
    assert_eq!(
        g.evaluate(utc("2028-03-01 00:00"), &[]).next_transition,
        Some(utc("2032-02-29 00:00"))
    );
}

#[test]
fn transitions_are_exactly_the_changes_in_the_half_open_range() {
    let g = week();
    let all = changes(&g, "2026-11-23 00:00", "2026-11-30 12:00", &[]);
    assert_eq!(
        all,
        vec![
            (utc("2026-11-23 08:00"), Open),
            (utc("2026-11-24 12:00"), Closed),
            (utc("2026-11-24 13:00"), Open),
            (utc("2026-11-26 17:00"), Closed),
            (utc("2026-11-30 08:00"), Open),
        ]
    );
    // (from, to]: a change at `from` is not listed, one at `to` is.
    assert_eq!(
        changes(&g, "2026-11-23 08:00", "2026-11-24 12:00", &[]),
        vec![(utc("2026-11-24 12:00"), Closed)]
    );
    assert!(changes(&g, "2026-11-24 12:00", "2026-11-24 12:00", &[]).is_empty());
    assert!(changes(&g, "2026-11-25 00:00", "2026-11-24 00:00", &[]).is_empty());
}

#[test]
fn occurrence_started_before_the_range_is_seen() {
    let g = week();
    let p = g.preview(utc("2026-11-25 00:00"), utc("2026-11-27 00:00"), &[]);
    assert_eq!(p.gate, "g");
    assert_eq!(p.initial.state, Open);
    assert_eq!(
        p.initial.reason,
        "allow window 'weekdays' until Thu 2026-11-26 17:00 UTC"
    );
    // Closed by default at Thu 17:00; the Friday deny keeps it closed, which is no change.
    assert_eq!(p.transitions.len(), 1);
    assert_eq!(
        (p.transitions[0].at, p.transitions[0].reason.as_str()),
        (utc("2026-11-26 17:00"), "default (closed)")
    );
}

#[test]
fn overlapping_occurrences_form_one_span() {
    // Every hour for 90 minutes: continuously active; the reason names the end of the chain.
    let g = gate(
        "  default: closed\n  windows:\n    - {name: busy, kind: allow, schedule: '0 8-10 * * *', duration: 90m}\n",
    );
    assert_eq!(
        changes(&g, "2026-11-23 00:00", "2026-11-24 00:00", &[]),
        vec![
            (utc("2026-11-23 08:00"), Open),
            (utc("2026-11-23 11:30"), Closed)
        ]
    );
    assert_eq!(
        g.evaluate(utc("2026-11-23 08:10"), &[]).reason,
        "allow window 'busy' until 11:30 UTC"
    );
    // Touching occurrences (exactly one period long) do not flicker.
    let g = gate(
        "  default: closed\n  windows:\n    - {name: t, kind: allow, schedule: '0 * * * *', duration: 1h}\n",
    );
    assert!(changes(&g, "2026-11-23 00:00", "2026-11-24 00:00", &[]).is_empty());
    let e = g.evaluate(utc("2026-11-23 00:00"), &[]);
    assert_eq!(
        (e.state, e.reason.as_str(), e.next_transition),
        (Open, "allow window 't' (no end within 8 days)", None)
    );
}

#[test]
fn deny_cited_is_the_one_lasting_longest() {
    let g = gate(
        "  windows:\n    - {name: short, kind: deny, schedule: '0 8 * * *', duration: 1h}\n    - {name: long, kind: deny, schedule: '0 8 * * *', duration: 3h}\n",
    );
    assert_eq!(
        g.evaluate(utc("2026-11-23 08:30"), &[]).reason,
        "deny window 'long' until 11:00 UTC"
    );
}

#[test]
fn overrides_beat_windows_and_newest_wins() {
    let g = week();
    // Friday deny is active; an open override for an hour beats it.
    let open = ovr(
        "o1",
        Open,
        "2026-11-27 10:00",
        Some("2026-11-27 11:00"),
        "2026-11-27 09:55",
    );
    let e = g.evaluate(utc("2026-11-27 10:30"), std::slice::from_ref(&open));
    assert_eq!(e.state, Open);
    assert_eq!(
        e.reason,
        "override open by alice until 11:00 UTC: hotfix INC-42"
    );
    assert_eq!(e.next_transition, Some(utc("2026-11-27 11:00")));
    // Before it starts and at its expiry, the windows decide again ([starts_at, expires_at)).
    assert_eq!(
        g.evaluate(utc("2026-11-27 09:59"), std::slice::from_ref(&open))
            .next_transition,
        Some(utc("2026-11-27 10:00"))
    );
    assert_eq!(
        g.evaluate(utc("2026-11-27 11:00"), std::slice::from_ref(&open))
            .state,
        Closed
    );
    // A newer close override wins over the older open one while both are active.
    let close = ovr("o2", Closed, "2026-11-27 10:15", None, "2026-11-27 10:14");
    let both = [open.clone(), close.clone()];
    let e = g.evaluate(utc("2026-11-27 10:30"), &both);
    assert_eq!(
        (e.state, e.reason.as_str()),
        (
            Closed,
            "override closed by alice until cancelled: hotfix INC-42"
        )
    );
    assert_eq!(
        changes(&g, "2026-11-27 09:00", "2026-11-27 12:00", &both),
        vec![
            (utc("2026-11-27 10:00"), Open),
            (utc("2026-11-27 10:15"), Closed)
        ]
    );
    // Overrides of other gates are ignored.
    let mut other = open.clone();
    other.gate = "another".into();
    assert_eq!(g.evaluate(utc("2026-11-27 10:30"), &[other]).state, Closed);
    // A close override in an allow window; the reason shows the full date when it ends another day.
    let close = ovr(
        "o3",
        Closed,
        "2026-11-23 09:00",
        Some("2026-11-24 09:00"),
        "2026-11-23 09:00",
    );
    let e = g.evaluate(utc("2026-11-23 10:00"), &[close]);
    assert_eq!(
        (e.state, e.reason.as_str()),
        (
            Closed,
            "override closed by alice until Tue 2026-11-24 09:00 UTC: hotfix INC-42"
        )
    );
}

#[test]
fn sre_opens_a_default_closed_gate_for_one_hour() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/sre-approval.yaml"
    ))
    .unwrap();
    let g = fleetgate_policy::parse_gate(&text)
        .unwrap()
        .compile()
        .unwrap();
    let open = fleetgate_policy::Override {
        gate: "sre-approval".into(),
        ..ovr(
            "o",
            Open,
            "2026-11-23 14:00",
            Some("2026-11-23 15:00"),
            "2026-11-23 14:00",
        )
    };
    let p = g.preview(
        utc("2026-11-23 00:00"),
        utc("2026-11-24 00:00"),
        std::slice::from_ref(&open),
    );
    assert_eq!(p.initial.reason, "default (closed)");
    let got: Vec<_> = p
        .transitions
        .iter()
        .map(|t| (t.at, t.state, t.reason.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                utc("2026-11-23 14:00"),
                Open,
                "override open by alice until 15:00 UTC: hotfix INC-42"
            ),
            (utc("2026-11-23 15:00"), Closed, "default (closed)"),
        ]
    );
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "gate": "sre-approval",
            "initial": {"state": "closed", "reason": "default (closed)"},
            "transitions": [
                {"at": "2026-11-23T14:00:00Z", "state": "open", "reason": "override open by alice until 15:00 UTC: hotfix INC-42"},
                {"at": "2026-11-23T15:00:00Z", "state": "closed", "reason": "default (closed)"}
            ]
        })
    );
}

#[test]
fn seed_scenarios_in_their_zone() {
    let load = |f: &str| {
        let text =
            std::fs::read_to_string(format!("{}/../examples/{f}", env!("CARGO_MANIFEST_DIR")))
                .unwrap();
        fleetgate_policy::parse_gate(&text)
            .unwrap()
            .compile()
            .unwrap()
    };
    // Business hours: Mon 08:00 CET (07:00Z) to Thu 17:00 CET (16:00Z).
    let g = load("business-hours.yaml");
    assert_eq!(
        changes(&g, "2026-11-21 00:00", "2026-11-28 00:00", &[]),
        vec![
            (utc("2026-11-23 07:00"), Open),
            (utc("2026-11-26 16:00"), Closed)
        ]
    );
    // No Deploy Friday: Fri 00:00 CET to Mon 00:00 CET.
    let g = load("no-deploy-friday.yaml");
    let p = g.preview(utc("2026-11-26 12:00"), utc("2026-12-01 00:00"), &[]);
    assert_eq!(p.transitions[0].at, utc("2026-11-26 23:00"));
    assert_eq!(
        p.transitions[0].reason,
        "deny window 'weekend' until Mon 2026-11-30 00:00 CET"
    );
    assert_eq!(p.transitions[1].at, utc("2026-11-29 23:00"));
    // Holiday freeze: dated, local midnight CET.
    let g = load("holiday-freeze.yaml");
    assert_eq!(
        changes(&g, "2026-12-01 00:00", "2027-02-01 00:00", &[]),
        vec![
            (utc("2026-12-19 23:00"), Closed),
            (utc("2027-01-03 23:00"), Open)
        ]
    );
    // Release train: Tue–Thu 09:00–16:00 New York plus patch Tuesday 20:00–23:00.
    let g = load("freeze-sources.yaml");
    let opens: Vec<_> = g
        .transitions(utc("2026-12-07 00:00"), utc("2026-12-10 00:00"), &[])
        .into_iter()
        .filter(|t| t.state == Open)
        .map(|t| t.at)
        .collect();
    assert_eq!(
        opens,
        vec![
            utc("2026-12-08 14:00"),
            utc("2026-12-09 01:00"),
            utc("2026-12-09 14:00")
        ]
    );
}

#[test]
fn describe_in_words() {
    let g = week();
    assert_eq!(
        g.describe(),
        vec![
            "allow 'weekdays': every Mon 08:00 for 81h (UTC)",
            "deny 'friday': every Fri 00:00 for 72h (UTC)",
            "deny 'tuesday-all-day': every Tue 12:00 for 1h (UTC)",
            "otherwise closed (default)",
        ]
    );
    let g = gate(
        "  timeZone: Europe/Berlin\n  windows:\n    - {name: odd, kind: allow, schedule: '*/5 1 1 * *', duration: 1m}\n    - {name: x, kind: deny, start: '2026-12-20', end: '2027-01-04'}\n",
    );
    assert_eq!(
        g.describe(),
        vec![
            "allow 'odd': at cron '*/5 1 1 * *' for 1m (Europe/Berlin)",
            "deny 'x': from Sun 2026-12-20 00:00 to Mon 2027-01-04 00:00 (Europe/Berlin)",
            "otherwise open (default)",
        ]
    );
}

#[test]
fn combine_all_open_means_open() {
    let e = |state, next: Option<&str>| Evaluation {
        state,
        reason: String::new(),
        next_transition: next.map(utc),
    };
    let (a, b, c) = (
        e(Open, Some("2026-11-23 10:00")),
        e(Closed, Some("2026-11-23 09:00")),
        e(Closed, None),
    );
    let r = combine([("a", &a), ("b", &b), ("c", &c)]);
    assert!(!r.open);
    assert_eq!(r.closed_by, vec!["b", "c"]);
    assert_eq!(r.next_transition, Some(utc("2026-11-23 09:00")));
    let r = combine([("a", &a)]);
    assert!(r.open && r.closed_by.is_empty());
    let none: [(&str, &Evaluation); 0] = [];
    let r = combine(none);
    assert!(r.open && r.next_transition.is_none());
}

#[test]
fn the_deciding_rule_is_named() {
    use fleetgate_policy::Rule;
    let g = week();
    for (at, rule) in [
        ("2026-11-23 07:59", Rule::Default),
        ("2026-11-23 08:00", Rule::AllowWindow),
        ("2026-11-27 00:00", Rule::DenyWindow),
    ] {
        assert_eq!(g.evaluate(utc(at), &[]).rule(), rule, "at {at}");
    }
    let o = ovr(
        "o1",
        Open,
        "2026-11-27 01:00",
        Some("2026-11-27 02:00"),
        "2026-11-27 01:00",
    );
    let e = g.evaluate(utc("2026-11-27 01:30"), &[o]);
    assert_eq!((e.rule(), e.rule().as_str()), (Rule::Override, "Override"));
}
