//! Hub answers as the CLI's rendering tests build them (`status`, `rollout`):
//! one builder per answer, with only what a test is about spelled out.

use fleetgate_api_types::ClusterStatus;
use serde_json::{Value, json};

/// A cluster as status answers describe it: connected, no labels.
pub fn cluster(name: &str) -> Value {
    json!({"name": name, "connected": true, "labels": {},
           "createdAt": "2026-11-24T08:00:00Z", "lastSeenAt": null, "spokeVersion": null,
           "connectedReplica": null, "clockOffsetMs": null, "desiredRevision": 1})
}

/// Object counts: `governed` Flux objects, none held or suspended, `held_objects`
/// objects held inside them, of which `by_person` by a person (and as many waiting).
pub fn counts(governed: u32, held_objects: u32, by_person: u32) -> Value {
    json!({"governed": governed, "held": 0, "suspended": 0, "heldObjects": held_objects,
           "heldObjectsByPerson": by_person, "heldObjectsWaiting": by_person})
}

/// `GET /clusters/{name}/status` as the hub answers it: open, nothing
/// reported, nothing held, at 2026-11-24 09:00Z; `fields` replace any of that.
pub fn cluster_status(name: &str, fields: Value) -> ClusterStatus {
    let mut v = json!({
        "cluster": cluster(name),
        "at": "2026-11-24T09:00:00Z", "nextTransition": null,
        "open": true, "closedBy": [], "gates": [], "objects": [], "heldObjects": [],
        "counts": counts(0, 0, 0),
    });
    let Value::Object(fields) = fields else {
        panic!("fields: {fields}")
    };
    v.as_object_mut().unwrap().extend(fields);
    serde_json::from_value(v).unwrap()
}
