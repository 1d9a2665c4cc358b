//! `spec.rollout`: parsing, defaults, validation errors naming the field path, the wave
//! assignment (property-tested: every in-scope cluster in exactly one wave, independent of
//! input order, stable when other clusters are relabelled) and `open_since`, the opening
//! instant a release names.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, TimeZone, Utc};
use fleetgate_policy::{
    Amount, GateState, OPEN_SINCE_EVER, OnFailure, Override, WaveCandidate, assign_waves,
    parse_gate,
};
use proptest::prelude::*;

fn gate(rollout: &str) -> String {
    format!(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: g}}\nspec:\n  clusters: {{selector: {{}}}}\n  rollout:\n{rollout}"
    )
}

fn error(rollout: &str) -> String {
    parse_gate(&gate(rollout))
        .and_then(|g| g.validate())
        .expect_err("invalid")
        .to_string()
}

#[test]
fn parses_with_defaults() {
    let g = parse_gate(&gate(
        "    waves:\n      - {name: canary, clusters: {names: [c1]}}\n      - {percent: 50}\n      - {name: rest, approval: true}\n    soak: 10m\n    maxFailures: 10%\n",
    ))
    .unwrap();
    g.validate().unwrap();
    let r = g.spec.rollout.as_ref().unwrap();
    assert_eq!(r.soak(), Duration::minutes(10));
    assert_eq!(r.health_timeout(), Duration::minutes(30));
    assert_eq!(r.failure_grace(), Duration::seconds(60));
    assert_eq!(r.max_failures, Some(Amount::Percent(10)));
    assert_eq!(r.max_failures(25), 2);
    assert_eq!(r.on_failure, OnFailure::Halt);
    assert_eq!(r.wave_name(1), "wave-2");
    assert!(r.waves[2].approval);
    // Round trip through JSON keeps the percentage spelled as text.
    let json = serde_json::to_value(&g).unwrap();
    assert_eq!(json["spec"]["rollout"]["maxFailures"], "10%");
    assert_eq!(fleetgate_policy::parse_gate_json(json).unwrap(), g);
    let count = parse_gate(&gate(
        "    waves: [{}]\n    maxFailures: 2\n    onFailure: close\n",
    ))
    .unwrap();
    let r = count.spec.rollout.unwrap();
    assert_eq!(r.max_failures, Some(Amount::Count(2)));
    let grace = parse_gate(&gate("    waves: [{}]\n    failureGrace: 3m\n")).unwrap();
    grace.validate().unwrap();
    assert_eq!(
        grace.spec.rollout.unwrap().failure_grace(),
        Duration::minutes(3)
    );
    assert_eq!(r.on_failure, OnFailure::Close);
}

#[test]
fn errors_name_the_field() {
    assert_eq!(
        error("    waves: []\n"),
        "spec.rollout.waves: give at least one wave"
    );
    assert!(
        error("    waves: [{count: 1, percent: 5}, {}]\n")
            .starts_with("spec.rollout.waves[0]: give one of clusters, count or percent"),
    );
    assert!(error("    waves: [{}, {}]\n").starts_with("spec.rollout.waves[0]: give clusters"));
    assert!(error("    waves: [{percent: 0}, {}]\n").starts_with("spec.rollout.waves[0].percent"));
    assert!(error("    waves: [{count: 0}, {}]\n").starts_with("spec.rollout.waves[0].count"));
    assert!(
        error("    waves: [{clusters: {}}, {}]\n").starts_with("spec.rollout.waves[0].clusters")
    );
    assert!(
        error("    waves: [{name: a, count: 1}, {name: a}]\n")
            .starts_with("spec.rollout.waves[1].name: duplicate")
    );
    assert!(
        error("    waves: [{}]\n    soak: 5x\n").starts_with("spec.rollout.soak: invalid duration")
    );
    assert!(
        error("    waves: [{}]\n    healthTimeout: 200h\n")
            .starts_with("spec.rollout.healthTimeout: at most 168h")
    );
    assert_eq!(
        error("    waves: [{}]\n    healthTimeout: 5m\n    failureGrace: 5m\n"),
        "spec.rollout.failureGrace: must be shorter than healthTimeout (5m), got '5m'"
    );
    assert_eq!(
        error("    waves: [{}]\n    failureGrace: 45m\n"),
        "spec.rollout.failureGrace: must be shorter than healthTimeout (30m), got '45m'"
    );
    assert!(
        error("    waves: [{}]\n    failureGrace: soon\n")
            .starts_with("spec.rollout.failureGrace: invalid duration")
    );
    assert!(
        error("    waves: [{}]\n    maxFailures: 150%\n").starts_with("spec.rollout.maxFailures")
    );
    assert!(error("    waves: [{}]\n    maxFailures: many\n").contains("spec.rollout.maxFailures"));
    assert!(error("    waves: [{}]\n    onFailure: retry\n").contains("spec.rollout.onFailure"));
    assert!(error("    waves: [{}]\n    speed: 3\n").contains("speed"));
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn waves_by_name_selector_count_and_percent() {
    let g = parse_gate(&gate(
        "    sortLabel: order\n    waves:\n      - {clusters: {names: [z]}}\n      - {clusters: {selector: {matchLabels: {env: staging}}}}\n      - {count: 1}\n      - {percent: 50}\n      - {}\n",
    ))
    .unwrap();
    let r = g.spec.rollout.unwrap();
    let ls = [
        ("a", labels(&[("env", "prod"), ("order", "10")])),
        ("b", labels(&[("env", "prod"), ("order", "9")])),
        ("c", labels(&[("env", "staging")])),
        ("d", labels(&[("env", "prod")])),
        ("e", labels(&[("env", "prod"), ("order", "x")])),
        ("z", labels(&[("env", "staging")])),
    ];
    let cands: Vec<WaveCandidate<'_>> = ls
        .iter()
        .map(|(n, l)| WaveCandidate { name: n, labels: l })
        .collect();
    let waves = assign_waves(&r, &cands);
    // b (order 9) before a (order 10) numerically; e (non-numeric) next; d (no label) last.
    assert_eq!(
        waves,
        vec![
            vec!["z".to_string()],
            vec!["c".into()],
            vec!["b".into()],
            vec!["a".into(), "e".into()],
            vec!["d".into()],
        ]
    );
}

fn rollout_strategy() -> impl Strategy<Value = String> {
    let wave = prop_oneof![
        Just("{count: 1}".to_string()),
        Just("{count: 3}".to_string()),
        Just("{percent: 30}".to_string()),
        Just("{clusters: {selector: {matchLabels: {tier: a}}}}".to_string()),
        Just("{clusters: {names: [c1, c4]}}".to_string()),
    ];
    prop::collection::vec(wave, 0..4).prop_map(|ws| {
        let mut all = ws;
        all.push("{}".into());
        format!("    sortLabel: order\n    waves: [{}]\n", all.join(", "))
    })
}

fn fleet_strategy() -> impl Strategy<Value = Vec<(String, BTreeMap<String, String>)>> {
    prop::collection::btree_map(
        0u8..12,
        (prop::option::of(0u8..3), prop::option::of(0u8..5), 0u8..4),
        0..12,
    )
    .prop_map(|m| {
        m.into_iter()
            .map(|(i, (tier, order, other))| {
                let mut l = BTreeMap::new();
                if let Some(t) = tier {
                    l.insert("tier".into(), ["a", "b", "c"][t as usize].into());
                }
                if let Some(o) = order {
                    l.insert("order".into(), o.to_string());
                }
                l.insert("unrelated".into(), other.to_string());
                (format!("c{i}"), l)
            })
            .collect()
    })
}

fn assign(rollout: &str, fleet: &[(String, BTreeMap<String, String>)]) -> Vec<Vec<String>> {
    let r = parse_gate(&gate(rollout)).unwrap().spec.rollout.unwrap();
    let cands: Vec<WaveCandidate<'_>> = fleet
        .iter()
        .map(|(n, l)| WaveCandidate { name: n, labels: l })
        .collect();
    assign_waves(&r, &cands)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn every_cluster_in_exactly_one_wave(rollout in rollout_strategy(), fleet in fleet_strategy()) {
        let waves = assign(&rollout, &fleet);
        let mut seen: Vec<&String> = waves.iter().flatten().collect();
        seen.sort();
        let mut expected: Vec<&String> = fleet.iter().map(|(n, _)| n).collect();
        expected.sort();
        prop_assert_eq!(seen, expected);
    }

    #[test]
    fn independent_of_input_order(rollout in rollout_strategy(), fleet in fleet_strategy()) {
        let mut reversed = fleet.clone();
        reversed.reverse();
        prop_assert_eq!(assign(&rollout, &fleet), assign(&rollout, &reversed));
    }

    /// Relabelling another cluster with a label the rollout does not read moves nobody; and
    /// with waves chosen only by name or selector, relabelling a cluster in any way moves
    /// nobody else.
    #[test]
    fn stable_under_relabel_of_others(
        rollout in rollout_strategy(),
        fleet in fleet_strategy(),
        pick in any::<prop::sample::Index>(),
        tier in 0u8..3,
        other in 0u8..9,
    ) {
        prop_assume!(!fleet.is_empty());
        let before = assign(&rollout, &fleet);
        let k = pick.index(fleet.len());
        let moved = fleet[k].0.clone();

        let mut unrelated = fleet.clone();
        unrelated[k].1.insert("unrelated".into(), format!("x{other}"));
        prop_assert_eq!(&assign(&rollout, &unrelated), &before);

        if !rollout.contains("count") && !rollout.contains("percent") {
            let mut relabelled = fleet.clone();
            relabelled[k].1.insert("tier".into(), ["a", "b", "c"][tier as usize].into());
            relabelled[k].1.insert("order".into(), other.to_string());
            let after = assign(&rollout, &relabelled);
            let without = |w: &Vec<Vec<String>>| -> Vec<Vec<String>> {
                w.iter().map(|c| c.iter().filter(|n| **n != moved).cloned().collect()).collect()
            };
            prop_assert_eq!(without(&after), without(&before));
        }
    }
}

fn at(d: u32, h: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, d, h, 0, 0).unwrap()
}

#[test]
fn open_since_is_the_start_of_the_current_open_period() {
    let g = parse_gate(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: g}\nspec:\n  clusters: {selector: {}}\n  default: closed\n  windows:\n    - {name: day, kind: allow, schedule: \"0 8 * * *\", duration: 9h}\n",
    )
    .unwrap()
    .compile()
    .unwrap();
    assert_eq!(g.open_since(at(24, 9), &[]), Some(at(24, 8)));
    assert_eq!(g.open_since(at(24, 16), &[]), Some(at(24, 8)));
    assert_eq!(g.open_since(at(24, 18), &[]), None);
    // The next day's window is another opening.
    assert_eq!(g.open_since(at(25, 10), &[]), Some(at(25, 8)));
    // A gate-wide open override before the window opens the gate earlier: one period.
    let o = Override {
        id: "o".into(),
        gate: "g".into(),
        state: GateState::Open,
        starts_at: at(24, 6),
        expires_at: Some(at(24, 9)),
        created_at: at(24, 5),
        actor: "sre".into(),
        reason: "early".into(),
    };
    assert_eq!(
        g.open_since(at(24, 12), std::slice::from_ref(&o)),
        Some(at(24, 6))
    );
    // A close override in the middle splits the day into two openings.
    let c = Override {
        state: GateState::Closed,
        starts_at: at(24, 10),
        expires_at: Some(at(24, 11)),
        ..o
    };
    assert_eq!(
        g.open_since(at(24, 12), std::slice::from_ref(&c)),
        Some(at(24, 11))
    );

    let always = parse_gate(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: g}\nspec:\n  clusters: {selector: {}}\n",
    )
    .unwrap()
    .compile()
    .unwrap();
    assert_eq!(always.open_since(at(24, 12), &[]), Some(OPEN_SINCE_EVER));
}

#[test]
fn an_opening_fence_moves_the_open_period_after_a_freeze_that_left_no_trace() {
    let g = parse_gate(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: g}\nspec:\n  clusters: {selector: {}}\n  default: closed\n  windows:\n    - {name: day, kind: allow, schedule: \"0 8 * * *\", duration: 9h}\n",
    )
    .unwrap()
    .compile()
    .unwrap();
    // A freeze 10:00-11:00 that is no longer among the overrides: only the fence says so.
    assert_eq!(g.open_since(at(24, 12), &[]), Some(at(24, 8)));
    assert_eq!(
        g.open_since_fenced(at(24, 12), &[], Some(at(24, 11))),
        Some(at(24, 11))
    );
    // A fence from before the period (yesterday's freeze) changes nothing; closed stays
    // closed; no fence is open_since.
    assert_eq!(
        g.open_since_fenced(at(24, 12), &[], Some(at(23, 11))),
        Some(at(24, 8))
    );
    assert_eq!(g.open_since_fenced(at(24, 18), &[], Some(at(24, 11))), None);
    assert_eq!(g.open_since_fenced(at(24, 12), &[], None), Some(at(24, 8)));
    // The same freeze still among the overrides (an offline spoke's snapshot) agrees.
    let c = Override {
        id: "c".into(),
        gate: "g".into(),
        state: GateState::Closed,
        starts_at: at(24, 10),
        expires_at: Some(at(24, 11)),
        created_at: at(24, 10),
        actor: "sre".into(),
        reason: "freeze".into(),
    };
    assert_eq!(
        g.open_since_fenced(at(24, 12), std::slice::from_ref(&c), Some(at(24, 11))),
        Some(at(24, 11))
    );
}
