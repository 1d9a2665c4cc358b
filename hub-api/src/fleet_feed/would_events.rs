//! Warn mode on the change streams: a cluster's would-suspend/would-hold counts (what closed
//! `enforcement: warn` gates would do if enforced) as their own event, apart from the held
//! counts, since nothing is held for them.

use std::collections::BTreeSet;

use crate::service::fleet::{FleetView, WouldCounts};

/// A cluster's would-hold counts now and before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WouldHoldChange {
    pub cluster: String,
    pub now: WouldCounts,
    pub previous: WouldCounts,
}

/// The clusters whose counts differ between `prev` and `next` (a cluster missing from a view
/// counts zero), for the clusters `wanted` lets through.
pub(super) fn diff(
    prev: &FleetView,
    next: &FleetView,
    wanted: impl Fn(&str) -> bool,
) -> Vec<WouldHoldChange> {
    let clusters: BTreeSet<&String> = next
        .would_hold
        .keys()
        .chain(prev.would_hold.keys())
        .collect();
    clusters
        .into_iter()
        .filter(|c| wanted(c))
        .filter_map(|cluster| {
            let previous = prev.would_hold.get(cluster).copied().unwrap_or_default();
            let now = next.would_hold.get(cluster).copied().unwrap_or_default();
            (previous != now).then(|| WouldHoldChange {
                cluster: cluster.clone(),
                now,
                previous,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(counts: &[(&str, u32, u32)]) -> FleetView {
        let mut v = FleetView::default();
        for (c, s, h) in counts {
            v.would_hold.insert(
                c.to_string(),
                WouldCounts {
                    would_suspend: *s,
                    would_hold: *h,
                    ..WouldCounts::default()
                },
            );
        }
        v
    }

    #[test]
    fn only_changed_clusters_within_the_filter_and_a_gone_cluster_counts_zero() {
        let before = view(&[("a", 2, 1), ("b", 1, 0), ("c", 3, 3)]);
        let after = view(&[("a", 2, 1), ("b", 4, 2)]);
        let got = diff(&before, &after, |c| c != "x");
        let got: Vec<_> = got
            .iter()
            .map(|w| {
                (
                    w.cluster.as_str(),
                    w.previous.would_suspend,
                    w.now.would_suspend,
                    w.now.would_hold,
                )
            })
            .collect();
        assert_eq!(got, vec![("b", 1, 4, 2), ("c", 3, 0, 0)]);
        assert!(diff(&before, &after, |c| c == "a").is_empty());
        // The initial view: every cluster with counts.
        assert_eq!(diff(&FleetView::default(), &before, |_| true).len(), 3);
    }
}
