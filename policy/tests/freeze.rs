//! Fleet freezes: a closing override of the reserved gate `fleet-freeze` closes every gate,
//! above every override (newer or not), local request, window and default.

mod support;

use chrono::Duration;
use fleetgate_policy::{
    FREEZE_GATE, GateState, Override, Rule, active_freeze, combine, parse_gate,
};
use proptest::prelude::*;
use support::{gate, ovr, utc};

fn freeze(id: &str, starts: &str, expires: Option<&str>, created: &str) -> Override {
    Override::freeze(
        id,
        utc(starts),
        expires.map(utc),
        utc(created),
        "sre-lead",
        "INC-123",
    )
}

#[test]
fn a_freeze_closes_an_open_gate_and_says_so() {
    let g = gate("  default: open");
    let f = freeze(
        "f1",
        "2026-11-27 09:00",
        Some("2026-11-27 11:00"),
        "2026-11-27 09:00",
    );
    let e = g.evaluate(utc("2026-11-27 10:00"), std::slice::from_ref(&f));
    assert_eq!(e.state, GateState::Closed);
    assert_eq!(e.rule(), Rule::Freeze);
    assert_eq!(e.rule().as_str(), "Frozen");
    assert_eq!(
        e.reason,
        "fleet freeze by sre-lead until 11:00 UTC: INC-123"
    );
    assert_eq!(e.next_transition, Some(utc("2026-11-27 11:00")));
    // Before and after it, the gate's own rules.
    let before = g.evaluate(utc("2026-11-27 08:59"), std::slice::from_ref(&f));
    assert_eq!(before.state, GateState::Open);
    assert_eq!(before.next_transition, Some(utc("2026-11-27 09:00")));
    let after = g.evaluate(utc("2026-11-27 11:00"), std::slice::from_ref(&f));
    assert_eq!(
        (after.state, after.rule()),
        (GateState::Open, Rule::Default)
    );
}

#[test]
fn a_newer_open_override_does_not_beat_a_freeze() {
    let g = gate("  default: closed");
    let f = freeze("f1", "2026-11-27 09:00", None, "2026-11-27 09:00");
    // Opened by an SRE after the freeze began, and by a local request even later.
    let open = ovr(
        "o1",
        GateState::Open,
        "2026-11-27 09:30",
        None,
        "2026-11-27 09:30",
    );
    let mut local = ovr(
        "local:g:open",
        GateState::Open,
        "2026-11-27 09:40",
        None,
        "2026-11-27 09:40",
    );
    local.actor = "alice@cluster/prod-1".into();
    let e = g.evaluate(utc("2026-11-27 10:00"), &[f.clone(), open.clone(), local]);
    assert_eq!(e.state, GateState::Closed);
    assert!(
        e.reason
            .starts_with("fleet freeze by sre-lead until unfrozen"),
        "{}",
        e.reason
    );
    // Without the freeze the newest override decides.
    let e = g.evaluate(utc("2026-11-27 10:00"), &[open]);
    assert_eq!((e.state, e.rule()), (GateState::Open, Rule::Override));
}

#[test]
fn a_freeze_beats_allow_windows_and_shows_in_transitions() {
    let g = gate(
        "  default: closed\n  windows:\n    - {name: day, kind: allow, schedule: \"0 8 * * *\", duration: 10h}",
    );
    let f = freeze(
        "f1",
        "2026-11-27 09:00",
        Some("2026-11-27 10:00"),
        "2026-11-27 08:30",
    );
    let changes = support::changes(&g, "2026-11-27 07:00", "2026-11-27 19:00", &[f]);
    assert_eq!(
        changes,
        vec![
            (utc("2026-11-27 08:00"), GateState::Open),
            (utc("2026-11-27 09:00"), GateState::Closed),
            (utc("2026-11-27 10:00"), GateState::Open),
            (utc("2026-11-27 18:00"), GateState::Closed),
        ]
    );
}

#[test]
fn an_open_override_of_the_freeze_gate_is_no_freeze() {
    let g = gate("  default: closed");
    let mut o = freeze("f1", "2026-11-27 09:00", None, "2026-11-27 09:00");
    o.state = GateState::Open;
    assert!(!o.is_freeze());
    let e = g.evaluate(utc("2026-11-27 10:00"), &[o]);
    assert_eq!((e.state, e.rule()), (GateState::Closed, Rule::Default));
}

#[test]
fn the_newest_active_freeze_is_cited() {
    let a = freeze("a", "2026-11-27 09:00", None, "2026-11-27 09:00");
    let mut b = freeze(
        "b",
        "2026-11-27 09:10",
        Some("2026-11-27 09:20"),
        "2026-11-27 09:10",
    );
    b.reason = "INC-124".into();
    let all = [a, b];
    assert_eq!(
        active_freeze(&all, utc("2026-11-27 09:15")).map(|o| o.id.as_str()),
        Some("b")
    );
    assert_eq!(
        active_freeze(&all, utc("2026-11-27 09:25")).map(|o| o.id.as_str()),
        Some("a")
    );
    assert_eq!(active_freeze(&all, utc("2026-11-27 08:59")), None);
    let e = gate("  default: open").evaluate(utc("2026-11-27 09:15"), &all);
    assert!(e.reason.ends_with(": INC-124"), "{}", e.reason);
}

#[test]
fn no_gate_may_take_the_reserved_name() {
    let text = format!(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: {FREEZE_GATE}}}\nspec:\n  clusters: {{selector: {{}}}}\n"
    );
    let err = parse_gate(&text).and_then(|g| g.validate()).unwrap_err();
    assert_eq!(err.path, "metadata.name");
}

/// A gate spec among a few shapes: default open/closed, allow and deny windows.
fn spec() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("  default: open".to_string()),
        Just("  default: closed".to_string()),
        Just("  default: closed\n  windows:\n    - {name: day, kind: allow, schedule: \"0 8 * * *\", duration: 10h}".to_string()),
        Just("  default: open\n  windows:\n    - {name: fri, kind: deny, schedule: \"0 0 * * FRI\", duration: 72h}".to_string()),
        Just("  default: open\n  windows:\n    - {name: shifts, kind: allow, schedule: \"0 */3 * * *\", duration: 1h}\n    - {name: late, kind: deny, schedule: \"0 22 * * *\", duration: 2h}".to_string()),
    ]
}

/// Overrides of the gate or of the freeze gate, opening or closing, at minutes around a base.
fn overrides() -> impl Strategy<Value = Vec<(bool, bool, i64, Option<i64>, i64)>> {
    // (of the freeze gate?, open?, start, duration, created) in minutes from the base.
    proptest::collection::vec(
        (
            any::<bool>(),
            any::<bool>(),
            -600i64..600,
            proptest::option::of(1i64..900),
            -600i64..600,
        ),
        0..6,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// While a freeze is in force every gate is closed, whatever else applies; while none
    /// is, the freeze gate's overrides change nothing.
    #[test]
    fn while_a_freeze_covers_a_cluster_every_gate_is_closed(
        specs in proptest::collection::vec(spec(), 1..4),
        raw in overrides(),
        at in -600i64..1200,
    ) {
        let base = utc("2026-11-26 12:00");
        let gates: Vec<_> = specs.iter().map(|s| gate(s)).collect();
        let list: Vec<Override> = raw
            .iter()
            .enumerate()
            .map(|(i, (freeze_gate, open, start, dur, created))| Override {
                id: format!("o{i}"),
                gate: if *freeze_gate { FREEZE_GATE.into() } else { "g".into() },
                state: if *open { GateState::Open } else { GateState::Closed },
                starts_at: base + Duration::minutes(*start),
                expires_at: dur.map(|d| base + Duration::minutes(start + d)),
                created_at: base + Duration::minutes(*created),
                actor: "someone".into(),
                reason: "why".into(),
            })
            .collect();
        let t = base + Duration::minutes(at);
        let frozen = active_freeze(&list, t).is_some();
        let evals: Vec<_> = gates.iter().map(|g| g.evaluate(t, &list)).collect();
        if frozen {
            for e in &evals {
                prop_assert_eq!(e.state, GateState::Closed);
                prop_assert_eq!(e.rule(), Rule::Freeze);
            }
            let named: Vec<(String, _)> = evals.iter().enumerate().map(|(i, e)| (format!("g{i}"), e)).collect();
            prop_assert!(!combine(named.iter().map(|(n, e)| (n.as_str(), *e))).open);
        } else {
            let without: Vec<Override> = list.iter().filter(|o| !o.is_freeze()).cloned().collect();
            for (g, e) in gates.iter().zip(&evals) {
                prop_assert_eq!(e.state, g.evaluate(t, &without).state);
            }
        }
        // The transitions agree with evaluation at each instant of the sweep.
        let g = &gates[0];
        for tr in g.transitions(base - Duration::minutes(600), base + Duration::minutes(1200), &list) {
            prop_assert_eq!(g.evaluate(tr.at, &list).state, tr.state);
        }
    }
}
