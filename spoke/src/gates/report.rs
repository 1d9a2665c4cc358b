//! What a hub-connected spoke tells its hub about the Gate objects made in the
//! cluster (delivered from Git): each one's state as this spoke evaluates it
//! and whether it is enforced, so the hub can show them read-only.

use fleetgate_proto::{time::to_timestamp, v1 as pb};
use serde_json::Value;

use super::status::{Verdict, find_condition};

/// One Gate object made in the cluster, from the spoke's verdict and the
/// status it wrote (its `Ready` condition).
pub(super) fn local_gate(name: &str, verdict: &Verdict, status: &Value) -> pb::LocalGateStatus {
    let ready = find_condition(status, "Ready");
    let text = |field: &str| {
        ready
            .and_then(|c| c[field].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let (enforced, facts) = match verdict {
        Verdict::Enforced(f) => (true, Some(f)),
        // The last valid version is still enforced.
        Verdict::Invalid { previous, .. } => (previous.is_some(), previous.as_ref()),
        Verdict::Skipped { .. } => (false, None),
    };
    pb::LocalGateStatus {
        name: name.to_owned(),
        enforced,
        open: facts.is_some_and(|f| f.open),
        reason: facts.map(|f| f.reason.to_owned()).unwrap_or_default(),
        message: facts.map(|f| f.message.clone()).unwrap_or_default(),
        next_transition: facts.and_then(|f| f.next_transition).map(to_timestamp),
        governed: facts.map_or(0, |f| count(f.governed)),
        held: facts.map_or(0, |f| count(f.held)),
        ready: text("status"),
        ready_reason: text("reason"),
        ready_message: text("message"),
    }
}
