//! What names a CustomResourceDefinition object and its status conditions: a leaf the
//! registry, the strategy, the seed and the controllers all read.

use serde_json::{Value, json};

pub const GROUP: &str = "apiextensions.k8s.io";
pub const KIND: &str = "CustomResourceDefinition";
/// Storage key of CRD objects (`ResourceType::key`).
pub const CRD_KEY: &str = "apiextensions.k8s.io/v1/customresourcedefinitions";
/// apiextensions.CustomResourceCleanupFinalizer.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

pub fn condition_is(crd: &Value, type_: &str, status: &str) -> bool {
    crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == type_ && c["status"] == status)
}

/// helpers.go, SetCRDCondition: the transition time changes only with the status.
pub fn set_condition(
    crd: &mut Value,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
) {
    if !crd["status"]["conditions"].is_array() {
        crd["status"]["conditions"] = json!([]);
    }
    let Some(list) = crd["status"]["conditions"].as_array_mut() else {
        return;
    };
    let new = |time: &Value| {
        json!({"type": type_, "status": status, "lastTransitionTime": time,
               "reason": reason, "message": message})
    };
    match list.iter_mut().find(|c| c["type"] == type_) {
        Some(c) if c["status"] == status => *c = new(&c["lastTransitionTime"].clone()),
        Some(c) => *c = new(&json!(now)),
        None => list.push(new(&json!(now))),
    }
}
