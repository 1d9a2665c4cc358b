//! Approval events: the difference of two views' approval requests. A request
//! seen for the first time while pending is `pending`; a further approval that
//! leaves it pending is `pending` again (its approvals grew); a request whose
//! status moved (or that was first seen already decided, between two reads)
//! is `approved`, `rejected`, `expired` or `withdrawn`. Initial events name
//! only pending requests.

use fleetgate_api_types::ApprovalRequest;

use crate::service::fleet::FleetView;

/// What happened to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalChange {
    /// It waits for approvers (new, or one more approval given).
    Pending,
    Approved,
    Rejected,
    Expired,
    /// Its requester (or an admin) cancelled it.
    Withdrawn,
}

impl ApprovalChange {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::Expired => "expired",
            Self::Withdrawn => "withdrawn",
        }
    }

    fn of(status: &str) -> Option<Self> {
        Some(match status {
            "pending" => Self::Pending,
            "approved" => Self::Approved,
            "rejected" => Self::Rejected,
            "expired" => Self::Expired,
            "cancelled" => Self::Withdrawn,
            _ => return None,
        })
    }
}

/// The approval events from `prev` (None: the initial state) to `next`, for the
/// requests `wanted` says the watcher may see.
pub fn diff(
    prev: Option<&FleetView>,
    next: &FleetView,
    wanted: impl Fn(&ApprovalRequest) -> bool,
) -> Vec<(ApprovalRequest, ApprovalChange)> {
    let mut out = Vec::new();
    for (id, now) in &next.approvals {
        if !wanted(now) {
            continue;
        }
        let Some(change) = ApprovalChange::of(&now.status) else {
            continue;
        };
        let changed = match prev {
            None => change == ApprovalChange::Pending,
            Some(prev) => match prev.approvals.get(id) {
                None => true,
                Some(before) => {
                    before.status != now.status || before.approvals.len() != now.approvals.len()
                }
            },
        };
        if changed {
            out.push((now.clone(), change));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use fleetgate_api_types::ApprovalEntry;

    use super::*;

    fn request(id: &str, status: &str, approvals: usize) -> ApprovalRequest {
        let at = Utc.with_ymd_and_hms(2026, 11, 27, 7, 0, 0).unwrap();
        ApprovalRequest {
            id: uuid::Uuid::parse_str(id).unwrap(),
            gate: "g".into(),
            state: "open".into(),
            clusters: None,
            duration: Some("1h".into()),
            starts_at: None,
            reason: "r".into(),
            ticket: None,
            requester: "ops".into(),
            required: 2,
            status: status.into(),
            created_at: at,
            expires_at: at + chrono::Duration::hours(1),
            decided_at: None,
            decided_by: None,
            decision_reason: None,
            override_id: None,
            approvals: (0..approvals)
                .map(|i| ApprovalEntry {
                    approver: format!("a{i}"),
                    at,
                    reason: None,
                })
                .collect(),
            you_may: None,
        }
    }

    fn view(requests: &[ApprovalRequest]) -> FleetView {
        FleetView {
            approvals: requests
                .iter()
                .map(|r| (r.id.to_string(), r.clone()))
                .collect(),
            ..FleetView::default()
        }
    }

    fn names(events: &[(ApprovalRequest, ApprovalChange)]) -> Vec<&'static str> {
        events.iter().map(|(_, c)| c.as_str()).collect()
    }

    const A: &str = "00000000-0000-4000-8000-00000000000a";
    const B: &str = "00000000-0000-4000-8000-00000000000b";

    #[test]
    fn requests_move_through_their_states() {
        let all = |_: &ApprovalRequest| true;
        let one = view(&[request(A, "pending", 0), request(B, "rejected", 0)]);
        // Initially: pending requests only.
        assert_eq!(names(&diff(None, &one, all)), vec!["pending"]);
        // Unchanged: nothing.
        assert!(diff(Some(&one), &one, all).is_empty());
        // One approval of two: pending again; then approved.
        let two = view(&[request(A, "pending", 1), request(B, "rejected", 0)]);
        assert_eq!(names(&diff(Some(&one), &two, all)), vec!["pending"]);
        let three = view(&[request(A, "approved", 2)]);
        assert_eq!(names(&diff(Some(&two), &three, all)), vec!["approved"]);
        // Made and withdrawn between two reads: its outcome still shows.
        let four = view(&[request(A, "approved", 2), request(B, "cancelled", 0)]);
        assert_eq!(names(&diff(Some(&three), &four, all)), vec!["withdrawn"]);
        // Filtered out: nothing.
        assert!(diff(Some(&one), &two, |_| false).is_empty());
    }
}
