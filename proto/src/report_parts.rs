//! Splitting a [`StatusReport`] into parts of a few KiB (the `more` field),
//! so that neither the spoke's encode buffer nor the hub's per-stream decode
//! buffer grows to the size of a whole report and stays there.

use prost::Message;

use crate::v1::{SpokeMessage, StatusReport, spoke_message};

/// Largest encoded size of one part's objects (a single larger object still
/// gets a part of its own). Hub streams then keep decode buffers of a few KiB.
pub const PART_BYTES: usize = 4 * 1024;

/// Most objects one report (all its parts together) may carry; the hub
/// rejects a report beyond this with INVALID_ARGUMENT.
pub const MAX_REPORT_OBJECTS: usize = 100_000;

/// `report` as consecutive parts of at most `part_bytes` of objects each; every
/// part but the last has `more = true`. Revision, clock offset, observation
/// time and `has_inventory` are repeated in every part; local gates are on the last part. An empty
/// report is one part.
pub fn split(report: StatusReport, part_bytes: usize) -> Vec<StatusReport> {
    let StatusReport {
        revision,
        objects,
        clock_offset_ms,
        observed_at,
        more: _,
        held_objects,
        local_gates,
        inventory,
        has_inventory,
        snapshot_persistence,
    } = report;
    let part = |objects, held_objects, inventory| StatusReport {
        revision,
        objects,
        clock_offset_ms,
        observed_at,
        more: true,
        held_objects,
        local_gates: Vec::new(),
        inventory,
        has_inventory,
        snapshot_persistence: None,
    };
    let mut parts = Vec::new();
    let (mut current, mut held) = (Vec::new(), Vec::new());
    let mut size = 0;
    // Field tag + length prefix + body, as it is encoded inside the report.
    let framed = |len: usize| len + prost::length_delimiter_len(len) + 1;
    for o in objects {
        let len = framed(o.encoded_len());
        if !current.is_empty() && size + len > part_bytes {
            parts.push(part(std::mem::take(&mut current), Vec::new(), Vec::new()));
            size = 0;
        }
        size += len;
        current.push(o);
    }
    for h in held_objects {
        let len = framed(h.encoded_len());
        if (!current.is_empty() || !held.is_empty()) && size + len > part_bytes {
            parts.push(part(
                std::mem::take(&mut current),
                std::mem::take(&mut held),
                Vec::new(),
            ));
            size = 0;
        }
        size += len;
        held.push(h);
    }
    let mut inv = Vec::new();
    for o in inventory {
        let len = framed(o.encoded_len());
        if (!current.is_empty() || !held.is_empty() || !inv.is_empty()) && size + len > part_bytes {
            parts.push(part(
                std::mem::take(&mut current),
                std::mem::take(&mut held),
                std::mem::take(&mut inv),
            ));
            size = 0;
        }
        size += len;
        inv.push(o);
    }
    parts.push(part(current, held, inv));
    if let Some(last) = parts.last_mut() {
        last.more = false;
        // A few per cluster: they ride on the last part, which applies the report.
        last.local_gates = local_gates;
        last.snapshot_persistence = snapshot_persistence;
    }
    parts
}

/// A spoke message as sent on the stream: a report as its parts of at most
/// [`PART_BYTES`], any other message as itself.
pub fn message_parts(m: SpokeMessage) -> Vec<SpokeMessage> {
    match m.msg {
        Some(spoke_message::Msg::Report(r)) => split(r, PART_BYTES)
            .into_iter()
            .map(|part| SpokeMessage {
                msg: Some(spoke_message::Msg::Report(part)),
            })
            .collect(),
        msg => vec![SpokeMessage { msg }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1::ObjectStatus;

    fn object(i: usize, revision_len: usize) -> ObjectStatus {
        ObjectStatus {
            kind: "Kustomization".into(),
            namespace: "apps".into(),
            name: format!("app-{i:04}"),
            gates: vec!["weekday-window".into()],
            last_applied_revision: "x".repeat(revision_len),
            ..Default::default()
        }
    }

    fn report(objects: Vec<ObjectStatus>) -> StatusReport {
        StatusReport {
            revision: 7,
            objects,
            clock_offset_ms: -12,
            observed_at: Some(prost_types::Timestamp {
                seconds: 5,
                nanos: 0,
            }),
            more: false,
            held_objects: vec![],
            local_gates: vec![],
            inventory: vec![],
            has_inventory: false,
            snapshot_persistence: None,
        }
    }

    #[test]
    fn parts_carry_every_object_in_order_within_the_size() {
        let objects: Vec<_> = (0..1000).map(|i| object(i, 60)).collect();
        let parts = split(report(objects.clone()), PART_BYTES);
        assert!(parts.len() > 10, "{} parts", parts.len());
        let rejoined: Vec<_> = parts.iter().flat_map(|p| p.objects.clone()).collect();
        assert_eq!(rejoined, objects);
        for (i, p) in parts.iter().enumerate() {
            assert_eq!(p.more, i + 1 < parts.len());
            assert_eq!((p.revision, p.clock_offset_ms), (7, -12));
            assert!(p.observed_at.is_some());
            assert!(!p.objects.is_empty());
            // The whole part message stays near the budget (header fields ~20 B).
            assert!(p.encoded_len() <= PART_BYTES + 32, "{}", p.encoded_len());
        }
    }

    #[test]
    fn held_objects_follow_the_objects_within_the_size() {
        let objects: Vec<_> = (0..30).map(|i| object(i, 60)).collect();
        let held: Vec<_> = (0..500)
            .map(|i| crate::v1::HeldObjectStatus {
                group: "apps".into(),
                kind: "Deployment".into(),
                namespace: "web".into(),
                name: format!("web-{i:04}"),
                kustomization_namespace: "flux-system".into(),
                kustomization_name: "apps".into(),
                held_by: vec!["window".into()],
                ..Default::default()
            })
            .collect();
        let mut r = report(objects.clone());
        r.held_objects = held.clone();
        r.local_gates = vec![crate::v1::LocalGateStatus {
            name: "git-freeze".into(),
            ..Default::default()
        }];
        let parts = split(r, PART_BYTES);
        let with_local: Vec<bool> = parts.iter().map(|p| !p.local_gates.is_empty()).collect();
        assert_eq!(with_local.iter().filter(|b| **b).count(), 1);
        assert_eq!(
            with_local.last(),
            Some(&true),
            "local gates ride on the last part"
        );
        assert!(parts.len() > 5, "{} parts", parts.len());
        let objs: Vec<_> = parts.iter().flat_map(|p| p.objects.clone()).collect();
        let helds: Vec<_> = parts.iter().flat_map(|p| p.held_objects.clone()).collect();
        assert_eq!((objs, helds), (objects, held));
        for p in &parts {
            assert!(p.encoded_len() <= PART_BYTES + 32, "{}", p.encoded_len());
        }
        assert!(!parts.last().unwrap().more);
    }

    #[test]
    fn small_and_empty_reports_are_one_part() {
        let parts = split(report(vec![]), PART_BYTES);
        assert_eq!(parts.len(), 1);
        assert!(!parts[0].more && parts[0].objects.is_empty());
        let parts = split(report(vec![object(1, 10), object(2, 10)]), PART_BYTES);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].objects.len(), 2);
        assert!(!parts[0].more);
    }

    #[test]
    fn an_object_larger_than_a_part_gets_its_own_part() {
        let objects = vec![object(1, 10), object(2, 3 * PART_BYTES), object(3, 10)];
        let parts = split(report(objects), PART_BYTES);
        let sizes: Vec<usize> = parts.iter().map(|p| p.objects.len()).collect();
        assert_eq!(sizes, vec![1, 1, 1]);
        assert_eq!(
            parts.iter().map(|p| p.more).collect::<Vec<_>>(),
            vec![true, true, false]
        );
    }

    #[test]
    fn the_inventory_follows_within_the_size() {
        let objects: Vec<_> = (0..30).map(|i| object(i, 60)).collect();
        let inventory: Vec<_> = (0..800)
            .map(|i| crate::v1::InventoryObject {
                kind: "Kustomization".into(),
                namespace: "apps".into(),
                name: format!("app-{i:04}"),
                labels: [("tier".to_owned(), "prod".to_owned())].into(),
                sources: vec!["GitRepository/flux-system/repo".into()],
                ..Default::default()
            })
            .collect();
        let mut r = report(objects.clone());
        r.inventory = inventory.clone();
        r.has_inventory = true;
        let parts = split(r, PART_BYTES);
        assert!(parts.len() > 5, "{} parts", parts.len());
        assert!(parts.iter().all(|p| p.has_inventory), "in every part");
        let objs: Vec<_> = parts.iter().flat_map(|p| p.objects.clone()).collect();
        let inv: Vec<_> = parts.iter().flat_map(|p| p.inventory.clone()).collect();
        assert_eq!((objs, inv), (objects, inventory));
        for p in &parts {
            assert!(p.encoded_len() <= PART_BYTES + 32, "{}", p.encoded_len());
        }
    }
}
