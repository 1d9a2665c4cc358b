//! The annotations the spoke writes on Flux objects and the JSON merge patches
//! that write them. One patch per object and action; each carries the observed
//! `metadata.resourceVersion`, so a concurrent edit makes it fail with 409.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

/// Marks a suspend made by fleetgate: the comma-separated names of the closed
/// gates holding the object. Without it, `spec.suspend: true` belongs to a person.
pub const SUSPENDED_BY: &str = "fleetgate.io/suspended-by";
/// When fleetgate suspended the object (RFC 3339, UTC).
pub const SUSPENDED_AT: &str = "fleetgate.io/suspended-at";
/// A person's opt-out: an object annotated `fleetgate.io/ignore: "true"` is never governed
/// (deploy/flux sets it on the Kustomization that delivers the spoke itself).
pub const IGNORE: &str = "fleetgate.io/ignore";
/// Marks a `kustomize.toolkit.fluxcd.io/reconcile: disabled` annotation as
/// fleetgate's: set beside a suspend of a Flux object a parent Kustomization
/// applies, so the parent's server-side apply (which would revert
/// `spec.suspend` when its manifest declares `suspend: false`) skips it.
pub const PINNED: &str = "fleetgate.io/pinned";
/// kustomize-controller skips any object whose live copy carries this with
/// value `disabled` (fluxcd/pkg ssa `shouldSkipApply`, case-insensitive); the
/// nested pin and `hold::marks` both set it.
pub const RECONCILE: &str = "kustomize.toolkit.fluxcd.io/reconcile";
/// Names the freeze that holds an object fleetgate suspended, and its reason
/// (`cluster freeze by alice (ConfigMap fleetgate-freeze) until unfrozen: INC-123`): set
/// while a freeze (the hub's or the cluster's) closes the gates holding it, removed when the
/// freeze ends or the object is resumed. Never on an object a person suspended.
pub const FREEZE_REASON: &str = "fleetgate.io/freeze-reason";
/// Flux's "reconcile now" request, set on resume so held changes roll out at once.
pub const REQUESTED_AT: &str = "reconcile.fluxcd.io/requestedAt";

/// Parses the `fleetgate.io/suspended-by` value into sorted, unique gate names.
pub fn parse_suspended_by(value: &str) -> Vec<String> {
    let mut gates: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(str::to_owned)
        .collect();
    gates.sort();
    gates.dedup();
    gates
}

/// Formats gate names for `fleetgate.io/suspended-by` (sorted, comma-separated).
pub fn format_suspended_by(gates: &[String]) -> String {
    let mut gates = gates.to_vec();
    gates.sort();
    gates.dedup();
    gates.join(",")
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn metadata(resource_version: Option<&str>, annotations: Value) -> Value {
    match resource_version {
        Some(rv) => json!({ "resourceVersion": rv, "annotations": annotations }),
        None => json!({ "annotations": annotations }),
    }
}

/// Suspends the object and marks the suspend as fleetgate's.
pub fn suspend_patch(
    resource_version: Option<&str>,
    gates: &[String],
    now: DateTime<Utc>,
) -> Value {
    json!({
        "metadata": metadata(resource_version, json!({
            SUSPENDED_BY: format_suspended_by(gates),
            SUSPENDED_AT: rfc3339(now),
        })),
        "spec": { "suspend": true },
    })
}

/// Adds (`true`) or removes (`false`) fleetgate's pin to a patch: the
/// `reconcile: disabled` annotation with fleetgate's marker beside it.
pub fn with_pin(mut patch: Value, pin: bool) -> Value {
    let value = |v: &str| if pin { json!(v) } else { Value::Null };
    if let Some(ann) = patch
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        ann.insert(RECONCILE.into(), value("disabled"));
        ann.insert(PINNED.into(), value("true"));
    }
    patch
}

/// Sets (`Some`) or removes (`None`) the freeze's reason on a patch.
pub fn with_freeze(mut patch: Value, freeze: Option<&str>) -> Value {
    if let Some(ann) = patch
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        ann.insert(
            FREEZE_REASON.into(),
            freeze.map_or(Value::Null, |f| json!(f)),
        );
    }
    patch
}

/// Updates which gates hold an object fleetgate already suspended.
pub fn relabel_patch(resource_version: Option<&str>, gates: &[String]) -> Value {
    json!({
        "metadata": metadata(resource_version, json!({ SUSPENDED_BY: format_suspended_by(gates) })),
    })
}

/// Resumes an object fleetgate suspended, removes its marks and asks Flux to
/// reconcile at once. `requestedAt` carries nanoseconds so two resumes within
/// one second still differ (Flux only reacts to a changed value).
pub fn resume_patch(resource_version: Option<&str>, now: DateTime<Utc>) -> Value {
    json!({
        "metadata": metadata(resource_version, json!({
            SUSPENDED_BY: null,
            SUSPENDED_AT: null,
            FREEZE_REASON: null,
            REQUESTED_AT: now.to_rfc3339_opts(SecondsFormat::Nanos, true),
        })),
        "spec": { "suspend": false },
    })
}

/// Removes stale marks from an object that is not suspended (someone resumed it
/// by hand after the gates opened); `spec` is left alone.
pub fn clear_patch(resource_version: Option<&str>) -> Value {
    json!({
        "metadata": metadata(resource_version, json!({
            SUSPENDED_BY: null,
            SUSPENDED_AT: null,
            FREEZE_REASON: null,
        })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-27T07:00:00.123456789Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn suspended_by_round_trips_sorted_and_unique() {
        let gates = parse_suspended_by(" b, a,,b ");
        assert_eq!(gates, vec!["a", "b"]);
        assert_eq!(format_suspended_by(&gates), "a,b");
        assert!(parse_suspended_by("").is_empty());
    }

    #[test]
    fn suspend_patch_sets_suspend_marks_and_resource_version() {
        let p = suspend_patch(Some("42"), &["z".into(), "a".into()], at());
        assert_eq!(
            p,
            json!({
                "metadata": {
                    "resourceVersion": "42",
                    "annotations": {
                        "fleetgate.io/suspended-by": "a,z",
                        "fleetgate.io/suspended-at": "2026-11-27T07:00:00Z",
                    },
                },
                "spec": { "suspend": true },
            })
        );
    }

    #[test]
    fn resume_patch_removes_marks_and_requests_reconcile() {
        let p = resume_patch(Some("7"), at());
        assert_eq!(p["spec"]["suspend"], json!(false));
        let ann = &p["metadata"]["annotations"];
        assert_eq!(ann[SUSPENDED_BY], Value::Null);
        assert!(ann.as_object().unwrap().contains_key(SUSPENDED_AT));
        assert_eq!(ann[REQUESTED_AT], json!("2026-11-27T07:00:00.123456789Z"));
        assert_eq!(p["metadata"]["resourceVersion"], json!("7"));
    }

    #[test]
    fn relabel_and_clear_leave_spec_alone() {
        assert!(relabel_patch(None, &["g".into()]).get("spec").is_none());
        let c = clear_patch(Some("1"));
        assert!(c.get("spec").is_none());
        assert_eq!(c["metadata"]["annotations"][SUSPENDED_BY], Value::Null);
    }

    #[test]
    fn the_freeze_reason_is_set_and_removed_with_the_marks() {
        let p = with_freeze(relabel_patch(None, &["g".into()]), Some("freeze 7: INC-1"));
        assert_eq!(
            p["metadata"]["annotations"][FREEZE_REASON],
            json!("freeze 7: INC-1")
        );
        let p = with_freeze(relabel_patch(None, &["g".into()]), None);
        let ann = p["metadata"]["annotations"].as_object().unwrap();
        assert_eq!(ann.get(FREEZE_REASON), Some(&Value::Null));
        for p in [resume_patch(None, at()), clear_patch(None)] {
            let ann = p["metadata"]["annotations"].as_object().unwrap();
            assert_eq!(ann.get(FREEZE_REASON), Some(&Value::Null));
        }
    }
}
