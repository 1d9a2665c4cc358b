//! The rollout state machine as one pure step: from the gate's state, the clusters in its
//! scope, the current rollout and its clusters' health at `now`, the next rollout state and
//! what happened (events for the audit log, the fleet feed and metrics). The driver
//! (`service::rollouts`) reads the inputs, runs [`step`] and persists the result in one
//! transaction, before any snapshot carries a release.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use fleetgate_policy::{OnFailure, Rollout, WaveCandidate, assign_waves};
use sqlx::types::Json;
use uuid::Uuid;

use super::health::{Health, Verdict};
use super::{Event, State};
use crate::db::rollouts::{MemberRow, RolloutRow};

/// A cluster in the gate's scope, as the step sees it.
#[derive(Debug, Clone)]
pub struct ScopeCluster {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// When its open period began, with the overrides applying to it (`None`: closed).
    pub open_since: Option<DateTime<Utc>>,
    /// An active cluster-scoped open override: released ahead of its wave.
    pub bypass: bool,
}

/// What a step reads.
#[derive(Debug)]
pub struct StepInput<'a> {
    pub now: DateTime<Utc>,
    pub gate: &'a str,
    /// The gate's `spec.rollout` now (`None`: removed, which ends a current rollout).
    pub spec: Option<&'a Rollout>,
    /// When the gate's open period for its scope began (windows, default and gate-wide
    /// overrides); `None` while it is closed.
    pub gate_open_since: Option<DateTime<Utc>>,
    pub scope: &'a [ScopeCluster],
    /// The health of the current rollout's released clusters.
    pub health: &'a HashMap<String, Verdict>,
}

/// A rollout with its clusters.
#[derive(Debug, Clone, PartialEq)]
pub struct Current {
    pub row: RolloutRow,
    pub members: Vec<MemberRow>,
}

/// What a step did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The rollout this step ended (the gate closed or opened anew).
    pub ended: Option<Current>,
    /// The current rollout after the step.
    pub current: Option<Current>,
    pub events: Vec<Event>,
}

impl Current {
    /// The number of waves, late ones included.
    pub fn wave_count(&self) -> i32 {
        let spec = i32::try_from(self.row.spec.waves.len()).unwrap_or(i32::MAX);
        self.members
            .iter()
            .map(|m| m.wave + 1)
            .max()
            .unwrap_or(0)
            .max(spec)
    }

    fn state(&self) -> State {
        State::parse(&self.row.state)
    }

    fn set_state(&mut self, s: State) {
        self.row.state = s.as_str().to_string();
    }
}

/// One step at `input.now`.
pub fn step(input: &StepInput<'_>, current: Option<Current>) -> Outcome {
    let mut out = Outcome::default();
    let mut cur = current;
    if let Some(mut c) = cur.take() {
        let why = match (input.spec, input.gate_open_since) {
            (None, _) => Some("spec.rollout was removed from the gate"),
            (_, None) => Some("the gate closed"),
            (_, Some(t)) if t != c.row.opening_at => Some("the gate opened anew"),
            _ => None,
        };
        match why {
            Some(why) => {
                c.set_state(State::Ended);
                c.row.ended_at = Some(input.now);
                c.row.detail = Some(why.to_string());
                out.events
                    .push(Event::new(&c, "rollout.end", Some(why.into())));
                out.ended = Some(c);
            }
            None => cur = Some(c),
        }
    }
    // The health was judged for the rollout current before this step: a rollout started
    // by this step has no health yet (its releases are new), or the previous opening's
    // verdicts would pass or fail its first wave at once.
    let none = HashMap::new();
    let mut health = input.health;
    if cur.is_none()
        && let (Some(spec), Some(opening)) = (input.spec, input.gate_open_since)
    {
        let c = start(input, spec, opening);
        out.events.push(Event::new(&c, "rollout.start", None));
        cur = Some(c);
        health = &none;
    }
    if let Some(c) = &mut cur {
        drive(input, health, c, &mut out.events);
    }
    out.current = cur;
    out
}

fn start(input: &StepInput<'_>, spec: &Rollout, opening: DateTime<Utc>) -> Current {
    let candidates: Vec<WaveCandidate<'_>> = input
        .scope
        .iter()
        .map(|c| WaveCandidate {
            name: &c.name,
            labels: &c.labels,
        })
        .collect();
    let members = assign_waves(spec, &candidates)
        .into_iter()
        .enumerate()
        .flat_map(|(wave, names)| {
            names.into_iter().map(move |cluster| MemberRow {
                cluster,
                wave: i32::try_from(wave).unwrap_or(i32::MAX),
                late: false,
                released_at: None,
                opening_at: None,
                release_revision: None,
                bypass: false,
                position: 0,
                failed_at: None,
                failure: None,
            })
        })
        .zip(0..)
        .map(|(m, position)| MemberRow { position, ..m })
        .collect();
    Current {
        row: RolloutRow {
            id: Uuid::new_v4(),
            gate: input.gate.to_string(),
            opening_at: opening,
            spec: Json(spec.clone()),
            state: State::Running.as_str().into(),
            wave: 0,
            wave_released_at: None,
            health_since: None,
            healthy_at: None,
            approved_wave: None,
            detail: None,
            started_at: input.now,
            ended_at: None,
        },
        members,
    }
}

/// Places late joiners, applies bypasses and per-cluster openings, then releases, judges
/// and advances waves for as long as the rollout can move at `now`.
fn drive(
    input: &StepInput<'_>,
    health: &HashMap<String, Verdict>,
    c: &mut Current,
    events: &mut Vec<Event>,
) {
    let now = input.now;
    let scope: HashMap<&str, &ScopeCluster> =
        input.scope.iter().map(|s| (s.name.as_str(), s)).collect();

    // Clusters that came into scope: the first wave not released yet (a late wave past the
    // last one when every wave has been released).
    let joining: Vec<&ScopeCluster> = input
        .scope
        .iter()
        .filter(|s| !c.members.iter().any(|m| m.cluster == s.name))
        .collect();
    if !joining.is_empty() {
        if c.state() == State::Completed {
            c.set_state(State::Running);
        }
        let wave = if c.row.wave_released_at.is_some() {
            c.row.wave + 1
        } else {
            c.row.wave
        };
        let after = c.members.iter().map(|m| m.position).max().unwrap_or(-1) + 1;
        for (s, position) in joining.iter().zip(after..) {
            c.members.push(MemberRow {
                cluster: s.name.clone(),
                wave,
                late: true,
                released_at: None,
                opening_at: None,
                release_revision: None,
                bypass: false,
                position,
                failed_at: None,
                failure: None,
            });
        }
        let names: Vec<&str> = joining.iter().map(|s| s.name.as_str()).collect();
        let mut e = Event::new(c, "rollout.join", Some(format!("wave {}", wave + 1)));
        e.wave = wave;
        e.clusters = names.iter().map(|n| n.to_string()).collect();
        events.push(e);
    }

    // Cluster-scoped open overrides release ahead of the wave; released clusters' openings
    // follow their own overrides (a close override on one cluster ends its open period).
    let mut bypassed = Vec::new();
    for m in &mut c.members {
        let Some(s) = scope.get(m.cluster.as_str()) else {
            continue;
        };
        if m.released_at.is_none() && s.bypass {
            m.released_at = Some(now);
            m.bypass = true;
            bypassed.push(m.cluster.clone());
        }
        if m.released_at.is_some() && s.open_since.is_some() && m.opening_at != s.open_since {
            m.opening_at = s.open_since;
        }
    }
    if !bypassed.is_empty() {
        let mut e = Event::new(
            c,
            "rollout.bypass",
            Some("a cluster-scoped open override opened it ahead of its wave".into()),
        );
        e.clusters = bypassed;
        events.push(e);
    }

    // Each pass moves the rollout at most one wave; a soak of zero and waves without
    // approval move several waves in one step.
    for _ in 0..=c.wave_count() {
        if !advance(input, health, c, &scope, events) {
            break;
        }
    }
}

/// One move of the current wave; false when nothing more can happen at `now`.
fn advance(
    input: &StepInput<'_>,
    health: &HashMap<String, Verdict>,
    c: &mut Current,
    scope: &HashMap<&str, &ScopeCluster>,
    events: &mut Vec<Event>,
) -> bool {
    let now = input.now;
    let state = c.state();
    if !matches!(state, State::Running | State::Paused) {
        return false;
    }
    let spec = c.row.spec.0.clone();
    if c.row.wave >= c.wave_count() {
        if state == State::Running {
            c.set_state(State::Completed);
            events.push(Event::new(c, "rollout.complete", None));
        }
        return false;
    }
    let wave = c.row.wave;
    let Some(released_at) = c.row.wave_released_at else {
        if state == State::Paused {
            return false;
        }
        let needs_approval = usize::try_from(wave)
            .ok()
            .and_then(|w| spec.waves.get(w))
            .is_some_and(|w| w.approval);
        if needs_approval && c.row.approved_wave != Some(wave) {
            return false;
        }
        let mut released = Vec::new();
        for m in c.members.iter_mut().filter(|m| m.wave == wave) {
            if m.released_at.is_none()
                && let Some(s) = scope.get(m.cluster.as_str())
            {
                m.released_at = Some(now);
                m.opening_at = s.open_since.or(Some(c.row.opening_at));
                released.push(m.cluster.clone());
            }
        }
        c.row.wave_released_at = Some(now);
        c.row.health_since = Some(now);
        c.row.healthy_at = None;
        let mut e = Event::new(c, "rollout.release", None);
        e.clusters = released;
        events.push(e);
        return true;
    };
    let _ = released_at;
    let wave_members: Vec<&MemberRow> = c
        .members
        .iter()
        .filter(|m| m.wave == wave && scope.contains_key(m.cluster.as_str()))
        .collect();
    let verdict = |m: &MemberRow| health.get(&m.cluster).map(|v| v.health);
    let failed: Vec<String> = wave_members
        .iter()
        .filter(|m| verdict(m) == Some(Health::Failed))
        .map(|m| m.cluster.clone())
        .collect();
    // Once healthy, a wave soaks: only a failure (beyond maxFailures) stops it from there.
    let settled = wave_members
        .iter()
        .all(|m| matches!(verdict(m), Some(Health::Healthy | Health::Failed)));
    let tolerated = spec.max_failures(wave_members.len());
    let why = |n: &str| {
        health
            .get(n)
            .and_then(|v| v.detail.clone())
            .unwrap_or_default()
    };
    // Every failure marks its cluster (the fleet table and grid show it), also one that
    // maxFailures tolerates.
    mark_failed(c, &failed, now, why);
    if failed.len() > tolerated {
        let detail = failed
            .iter()
            .map(|n| format!("{n}: {}", why(n)))
            .collect::<Vec<_>>()
            .join("; ");
        c.set_state(State::Halted);
        c.row.detail = Some(format!("wave {} failed: {detail}", wave + 1));
        if spec.on_failure == OnFailure::Close {
            for m in c.members.iter_mut().filter(|m| m.wave == wave && !m.bypass) {
                m.released_at = None;
            }
        }
        let mut e = Event::new(c, "rollout.halt", c.row.detail.clone());
        e.clusters = failed;
        events.push(e);
        return false;
    }
    let healthy_at = match c.row.healthy_at {
        Some(t) => t,
        None if !settled => return false,
        None => {
            c.row.healthy_at = Some(now);
            events.push(Event::new(c, "rollout.healthy", None));
            now
        }
    };
    if state == State::Paused {
        return false;
    }
    let skip_soak = c.row.approved_wave == Some(wave + 1);
    if now < healthy_at + spec.soak() && !skip_soak {
        return false;
    }
    c.row.wave += 1;
    c.row.wave_released_at = None;
    c.row.health_since = None;
    c.row.healthy_at = None;
    true
}

/// Records the failure on each of `failed` not marked yet (the fleet table and grid show
/// it): when, and why (the failing object and its Ready message).
fn mark_failed(
    c: &mut Current,
    failed: &[String],
    now: DateTime<Utc>,
    why: impl Fn(&str) -> String,
) {
    for m in c.members.iter_mut() {
        if m.failed_at.is_none() && failed.contains(&m.cluster) {
            m.failed_at = Some(now);
            m.failure = Some(why(&m.cluster));
        }
    }
}
