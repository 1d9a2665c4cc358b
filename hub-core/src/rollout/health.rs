//! Whether a released cluster is healthy for its rollout wave: a pure judgement over the
//! objects its spoke reported for the gate, fenced by the release (only reports the spoke
//! made at the snapshot revision carrying the release, or later, count), so health left over
//! from the previous revision never passes a wave.

use chrono::{DateTime, Duration, Utc};

pub use crate::db::rollouts::ObjectHealth;

/// What the hub knows about one released cluster.
#[derive(Debug, Clone)]
pub struct ClusterHealthInput<'a> {
    /// Its spoke's stream is open and fresh.
    pub connected: bool,
    /// The cluster's desired revision that carried the release.
    pub release_revision: i64,
    /// Health is judged from here (the release, or the rollout's last resume).
    pub since: DateTime<Utc>,
    /// The objects this gate governs there (ignored ones left out).
    pub objects: &'a [ObjectHealth],
}

pub use fleetgate_api_types::rollout::Health;

/// The judgement and, unless healthy, why (naming the failing object and its Ready message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub health: Health,
    pub detail: Option<String>,
}

/// A rollout's health limits: `spec.rollout.healthTimeout` and `failureGrace`.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A released cluster not healthy within it has failed.
    pub timeout: Duration,
    /// An object Ready=False or Stalled at the new revision continuously for longer (counted
    /// from its first failing report, or from the release or resume if later) has failed its
    /// cluster (Flux reports Ready=False for a moment while a new revision applies).
    pub grace: Duration,
}

impl Limits {
    /// The limits `spec.rollout` sets (defaults where unset).
    pub fn of(spec: &fleetgate_policy::Rollout) -> Self {
        Self {
            timeout: spec.health_timeout(),
            grace: spec.failure_grace(),
        }
    }
}

/// Judges a released cluster at `now` within the rollout's `limits`.
pub fn judge(input: &ClusterHealthInput<'_>, now: DateTime<Utc>, limits: Limits) -> Verdict {
    let timeout = limits.timeout;
    let timed_out = now - input.since >= timeout;
    let verdict = |health, detail: String| Verdict {
        health,
        detail: Some(detail),
    };
    if !input.connected {
        return if timed_out {
            verdict(
                Health::Failed,
                "spoke disconnected past the health timeout".into(),
            )
        } else {
            verdict(Health::Unknown, "spoke disconnected".into())
        };
    }
    let fresh = |o: &ObjectHealth| match o.report_revision {
        Some(r) => r >= input.release_revision,
        None => o.reported_at >= input.since,
    };
    let mut waiting: Option<String> = None;
    for o in input.objects {
        let id = format!("{} {}/{}", o.kind, o.namespace, o.name);
        if !fresh(o) {
            waiting.get_or_insert_with(|| format!("{id}: no report since the release"));
            continue;
        }
        let failing = o.stalled || o.ready.as_deref() == Some("False");
        if failing {
            let why = o.ready_message.clone().unwrap_or_default();
            let what = if o.stalled { "Stalled" } else { "Ready=False" };
            // Continuously failing for the grace: from its first failing report, not from
            // the release (an object turning Ready=False late in a wave gets the whole grace).
            let from = o.failing_since.map_or(input.since, |f| f.max(input.since));
            if now - from >= limits.grace {
                return verdict(Health::Failed, format!("{id}: {what}: {why}"));
            }
            waiting.get_or_insert_with(|| format!("{id}: {what}: {why}"));
            continue;
        }
        if let Some(why) = not_ready(o) {
            waiting.get_or_insert_with(|| format!("{id}: {why}"));
        }
    }
    match waiting {
        None => Verdict {
            health: Health::Healthy,
            detail: None,
        },
        Some(why) if timed_out => verdict(
            Health::Failed,
            format!("not healthy within the health timeout ({why})"),
        ),
        Some(why) => verdict(Health::Progressing, why),
    }
}

/// Why a freshly reported, non-failing object is not healthy yet; `None` when it is.
fn not_ready(o: &ObjectHealth) -> Option<String> {
    if let (Some(g), Some(seen)) = (o.generation, o.observed_generation)
        && seen < g
    {
        return Some(format!("generation {g} not observed yet (observed {seen})"));
    }
    if let (Some(applied), Some(newest)) = (&o.last_applied_revision, &o.newest_source_revision)
        && applied != newest
    {
        return Some(format!("applied {applied}, newest {newest}"));
    }
    match o.ready.as_deref() {
        Some("True") => None,
        // Spokes that predate readiness reports: applying the newest revision is all we know.
        None if o.last_applied_revision.is_some() => None,
        Some(other) => Some(format!("Ready={other}")),
        None => Some("not reconciled yet".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(min: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 24, 8, 0, 0).unwrap() + Duration::minutes(min)
    }

    fn ks(ready: &str, rev: i64) -> ObjectHealth {
        ObjectHealth {
            kind: "Kustomization".into(),
            namespace: "flux-system".into(),
            name: "apps".into(),
            ready: Some(ready.into()),
            ready_message: Some(
                if ready == "False" {
                    "apply failed"
                } else {
                    "ok"
                }
                .into(),
            ),
            generation: Some(2),
            observed_generation: Some(2),
            last_applied_revision: Some("main@sha1:b".into()),
            newest_source_revision: Some("main@sha1:b".into()),
            report_revision: Some(rev),
            reported_at: t(1),
            failing_since: (ready == "False").then(|| t(0)),
            ..ObjectHealth::default()
        }
    }

    fn judge_at(connected: bool, objects: &[ObjectHealth], now: i64) -> Verdict {
        judge_with(connected, objects, now, Duration::seconds(60))
    }

    fn judge_with(connected: bool, objects: &[ObjectHealth], now: i64, grace: Duration) -> Verdict {
        let input = ClusterHealthInput {
            connected,
            release_revision: 10,
            since: t(0),
            objects,
        };
        let limits = Limits {
            timeout: Duration::minutes(30),
            grace,
        };
        judge(&input, t(now), limits)
    }

    #[test]
    fn ready_at_the_release_revision_is_healthy() {
        assert_eq!(judge_at(true, &[ks("True", 10)], 2).health, Health::Healthy);
    }

    #[test]
    fn health_from_before_the_release_never_counts() {
        let v = judge_at(true, &[ks("True", 9)], 2);
        assert_eq!(v.health, Health::Progressing);
        assert!(v.detail.unwrap().contains("no report since the release"));
        assert_eq!(judge_at(true, &[ks("True", 9)], 30).health, Health::Failed);
    }

    #[test]
    fn disconnected_is_unknown_then_failed() {
        assert_eq!(
            judge_at(false, &[ks("True", 10)], 2).health,
            Health::Unknown
        );
        assert_eq!(
            judge_at(false, &[ks("True", 10)], 31).health,
            Health::Failed
        );
    }

    #[test]
    fn ready_false_fails_after_the_grace() {
        let v = judge_at(true, &[ks("False", 10)], 0);
        assert_eq!(v.health, Health::Progressing);
        let v = judge_at(true, &[ks("False", 10)], 2);
        assert_eq!(v.health, Health::Failed);
        assert!(v.detail.unwrap().contains("apply failed"));
        // A longer failureGrace gives the object longer.
        let long = Duration::minutes(5);
        let v = judge_with(true, &[ks("False", 10)], 4, long);
        assert_eq!(v.health, Health::Progressing);
        assert!(v.detail.unwrap().contains("apply failed"));
        assert_eq!(
            judge_with(true, &[ks("False", 10)], 5, long).health,
            Health::Failed
        );
        // A Ready=False left from before the release is not this revision's failure.
        assert_eq!(
            judge_at(true, &[ks("False", 9)], 2).health,
            Health::Progressing
        );
    }

    #[test]
    fn the_grace_counts_from_when_the_object_turned_failing() {
        // Ready=False from minute 20 of the wave: at minute 20 it is within its 1 min grace
        // (counted from the release it would be 20 min past it), at 21 it has failed.
        let mut late = ks("False", 10);
        late.failing_since = Some(t(20));
        let v = judge_at(true, std::slice::from_ref(&late), 20);
        assert_eq!(v.health, Health::Progressing, "{v:?}");
        let v = judge_at(true, std::slice::from_ref(&late), 21);
        assert_eq!(v.health, Health::Failed, "{v:?}");
        // Failing since before a resume: the grace counts from the resume.
        late.failing_since = Some(t(-10));
        assert_eq!(judge_at(true, &[late], 0).health, Health::Progressing);
    }

    #[test]
    fn unobserved_generation_or_older_revision_is_not_healthy() {
        let mut o = ks("True", 10);
        o.observed_generation = Some(1);
        assert_eq!(judge_at(true, &[o], 2).health, Health::Progressing);
        let mut o = ks("True", 10);
        o.last_applied_revision = Some("main@sha1:a".into());
        assert_eq!(judge_at(true, &[o], 2).health, Health::Progressing);
    }
}
