//! The marks of an object-level hold: kustomize-controller's own opt-out
//! (`kustomize.toolkit.fluxcd.io/reconcile: disabled`, which it honours on the
//! live copy: never applied, never pruned) plus fleetgate's markers beside it,
//! and the JSON merge patches that set and remove exactly those.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use crate::suspend::annotations::format_suspended_by;

pub use crate::suspend::annotations::RECONCILE;
/// `ssa: Ignore` has the same effect (a person's opt-out, never set by fleetgate).
pub const SSA: &str = "kustomize.toolkit.fluxcd.io/ssa";
/// fleetgate's marker: the `reconcile: disabled` annotation beside it is
/// fleetgate's, set for these closed gates. Without it the mark is a person's.
pub const HELD_BY: &str = "fleetgate.io/held-by";
/// When fleetgate marked the object (RFC 3339, UTC).
pub const HELD_AT: &str = "fleetgate.io/held-at";
/// The owning Kustomization's last applied revision when the object was marked:
/// a newer one applied since means changes to this object may be waiting.
pub const HELD_AT_REVISION: &str = "fleetgate.io/held-at-revision";
/// The owner labels kustomize-controller puts on everything it applies.
pub const OWNER_NAME: &str = "kustomize.toolkit.fluxcd.io/name";
pub const OWNER_NAMESPACE: &str = "kustomize.toolkit.fluxcd.io/namespace";

fn metadata(resource_version: Option<&str>, annotations: Value) -> Value {
    match resource_version {
        Some(rv) => json!({"metadata": {"resourceVersion": rv, "annotations": annotations}}),
        None => json!({"metadata": {"annotations": annotations}}),
    }
}

/// Marks the object held by `gates`, recording the owner's applied revision.
pub fn mark_patch(
    resource_version: Option<&str>,
    gates: &[String],
    revision: Option<&str>,
    now: DateTime<Utc>,
) -> Value {
    metadata(
        resource_version,
        json!({
            RECONCILE: "disabled",
            HELD_BY: format_suspended_by(gates),
            HELD_AT: now.to_rfc3339_opts(SecondsFormat::Secs, true),
            HELD_AT_REVISION: revision,
        }),
    )
}

/// Updates which gates hold an object fleetgate marked already.
pub fn relabel_patch(resource_version: Option<&str>, gates: &[String]) -> Value {
    metadata(
        resource_version,
        json!({ HELD_BY: format_suspended_by(gates) }),
    )
}

/// Removes exactly what `mark_patch` set. A `reconcile: disabled` *label* (a
/// person's, fleetgate only ever sets the annotation) stays.
pub fn release_patch(resource_version: Option<&str>) -> Value {
    metadata(
        resource_version,
        json!({ RECONCILE: null, HELD_BY: null, HELD_AT: null, HELD_AT_REVISION: null }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mark_and_release_touch_the_same_keys() {
        let at = DateTime::parse_from_rfc3339("2026-11-27T07:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let m = mark_patch(
            Some("5"),
            &["b".into(), "a".into()],
            Some("main@sha1:1"),
            at,
        );
        let ann = m["metadata"]["annotations"].as_object().unwrap();
        assert_eq!(ann[RECONCILE], "disabled");
        assert_eq!(ann[HELD_BY], "a,b");
        assert_eq!(m["metadata"]["resourceVersion"], "5");
        let r = release_patch(Some("6"));
        let released = r["metadata"]["annotations"].as_object().unwrap();
        let mut set: Vec<_> = ann.keys().collect();
        let mut removed: Vec<_> = released.keys().collect();
        set.sort();
        removed.sort();
        assert_eq!(set, removed);
        assert!(released.values().all(Value::is_null));
        assert!(relabel_patch(None, &["g".into()])["metadata"]["annotations"][RECONCILE].is_null());
    }
}
