//! What the fan-out index publishes per connected cluster: its snapshot, not
//! read yet, or gone; and the rule that a published value only moves forward.

use std::sync::Arc;

use crate::service::fleet::Snapshot;

/// What a connected spoke's cluster should hold, as published per cluster in
/// the fan-out index.
#[derive(Debug, Clone, PartialEq)]
pub enum Desired {
    /// Subscribed, first read not done yet.
    Pending,
    /// The current snapshot.
    Snapshot(Arc<Snapshot>),
    /// The cluster was deleted: its connections must end.
    Gone,
}

impl Desired {
    /// The revision, 0 when there is no snapshot.
    pub fn revision(&self) -> u64 {
        match self {
            Self::Snapshot(s) => s.revision,
            Self::Pending | Self::Gone => 0,
        }
    }

    /// Whether `new` should replace `self` in the index. Revisions only move
    /// forward (a slow, stale read never overwrites a newer one); an equal
    /// revision replaces only if the content differs (an override that
    /// expired in between). `Gone` is final until the cluster is re-created.
    pub fn should_replace_with(&self, new: &Desired) -> bool {
        match (self, new) {
            (Self::Pending, Self::Pending) => false,
            (Self::Pending, _) => true,
            (Self::Gone, Self::Snapshot(_)) => true,
            (Self::Gone, _) => false,
            (Self::Snapshot(_), Self::Gone) => true,
            (Self::Snapshot(_), Self::Pending) => false,
            (Self::Snapshot(cur), Self::Snapshot(new)) => {
                new.revision > cur.revision
                    || (new.revision == cur.revision && !new.same_content(cur))
            }
        }
    }
}

/// Snapshot gates named and versioned as given, with an empty manifest (the
/// fan-out's tests compare names and versions only).
#[cfg(test)]
pub(super) fn test_gates(gates: &[(&str, u64)]) -> Vec<crate::service::fleet::SnapshotGate> {
    gates
        .iter()
        .map(|(n, v)| crate::service::fleet::SnapshotGate {
            name: n.to_string(),
            version: *v,
            manifest_json: "{}".into(),
            release: None,
            waiting: None,
            opening_fence: None,
            calendars: std::sync::Arc::from([]),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(rev: u64, gates: &[(&str, u64)]) -> Desired {
        Desired::Snapshot(Arc::new(Snapshot::new(
            rev,
            "c1".into(),
            test_gates(gates),
            vec![],
        )))
    }

    #[test]
    fn revisions_only_move_forward() {
        assert!(snap(1, &[("a", 1)]).should_replace_with(&snap(2, &[("a", 1)])));
        assert!(!snap(2, &[("a", 1)]).should_replace_with(&snap(1, &[("a", 2)])));
        assert!(!snap(2, &[("a", 1)]).should_replace_with(&snap(2, &[("a", 1)])));
        assert!(snap(2, &[("a", 1)]).should_replace_with(&snap(2, &[("a", 2)])));
    }

    #[test]
    fn pending_and_gone() {
        assert!(Desired::Pending.should_replace_with(&snap(0, &[])));
        assert!(Desired::Pending.should_replace_with(&Desired::Gone));
        assert!(!snap(3, &[]).should_replace_with(&Desired::Pending));
        assert!(snap(3, &[]).should_replace_with(&Desired::Gone));
        assert!(!Desired::Gone.should_replace_with(&Desired::Gone));
        assert!(Desired::Gone.should_replace_with(&snap(9, &[])));
    }
}
