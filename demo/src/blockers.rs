//! What keeps a demo story from happening right now: the closed gates (other
//! than the one the story is about) that hold its objects whole, each with the
//! hub's reason ("deny window 'weekend' until Mon 2026-11-30 00:00 CET"). The
//! demo prints them instead of waiting for what they forbid, so it is ready in
//! seconds at any hour and every sentence it prints is true at that instant.

use fleetgate_api_types::{ClusterStatus, ObjectStatus};

use fleetgate::client::{Client, seg};
use fleetgate::error::Result;

/// A closed gate holding a story's objects, with the hub's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    pub gate: String,
    pub reason: String,
}

/// The gates other than `own` that keep an object matching `pick` suspended
/// on `cluster`, as the hub reports them now (sorted by gate name).
pub async fn find(
    client: &Client,
    cluster: &str,
    own: &str,
    pick: impl Fn(&ObjectStatus) -> bool,
) -> Result<Vec<Blocker>> {
    let st: ClusterStatus = client
        .get(&format!("/clusters/{}/status", seg(cluster)), &[])
        .await?;
    Ok(of(&st, own, pick))
}

/// [`find`] on a status already read.
pub fn of(st: &ClusterStatus, own: &str, pick: impl Fn(&ObjectStatus) -> bool) -> Vec<Blocker> {
    let mut gates: Vec<&str> = st
        .objects
        .iter()
        .filter(|o| pick(o))
        .flat_map(|o| o.object.suspended_by.iter().map(String::as_str))
        .filter(|g| *g != own)
        .collect();
    gates.sort_unstable();
    gates.dedup();
    gates
        .into_iter()
        .map(|gate| Blocker {
            gate: gate.to_string(),
            reason: st
                .gates
                .iter()
                .find(|g| g.gate == gate)
                .map(|g| g.reason.clone())
                .unwrap_or_else(|| "closed".into()),
        })
        .collect()
}

/// `no-deploy-friday (deny window 'weekend' until Mon 2026-11-30 00:00 CET)`,
/// several joined by "and".
pub fn describe(blockers: &[Blocker]) -> String {
    blockers
        .iter()
        .map(|b| format!("{} ({})", b.gate, b.reason))
        .collect::<Vec<_>>()
        .join(" and ")
}
