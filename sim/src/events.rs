//! Core `v1` Events and `events.k8s.io/v1` Events are one resource on a real server,
//! served in two shapes. Here each API stores its own writes, and lists of either include
//! the other's objects converted (k8s.io/kubernetes/pkg/apis/events/v1/conversion.go), so
//! `kubectl get events` and `kubectl describe` show what kube-rs' `Recorder` posted;
//! watches of either API see both (one resourceVersion sequence, so this is consistent).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::crd::ResourceType;

/// Field renames between events.k8s.io/v1 (left) and core/v1 (right).
const RENAMES: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

/// The storage key of the other Events API, if `rt` is one of them.
pub fn twin_key(rt: &ResourceType) -> Option<&'static str> {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "events") => Some("events.k8s.io/v1/events"),
        ("events.k8s.io", "events") => Some("/v1/events"),
        _ => None,
    }
}

/// Converts an Event from the twin API into `rt`'s shape.
pub fn convert(rt: &ResourceType, obj: &Arc<Value>) -> Arc<Value> {
    let to_core = rt.group.is_empty();
    let mut out = Map::new();
    for (k, v) in obj.as_object().into_iter().flatten() {
        let renamed = RENAMES.iter().find_map(|(ev, core)| {
            if to_core && k == ev {
                Some(*core)
            } else if !to_core && k == core {
                Some(*ev)
            } else {
                None
            }
        });
        out.insert(renamed.unwrap_or(k).to_string(), v.clone());
    }
    out.insert("apiVersion".into(), json!(rt.api_version()));
    out.insert("kind".into(), json!("Event"));
    if let (true, false, Some(c)) = (
        to_core,
        out.contains_key("source"),
        obj.get("reportingController"),
    ) {
        out.insert("source".into(), json!({"component": c}));
    }
    Arc::new(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::Registry;

    #[test]
    fn events_convert_both_ways() {
        let r = Registry::standard().unwrap();
        let core = r.by_kind("v1", "Event").unwrap();
        let ev = r.by_kind("events.k8s.io/v1", "Event").unwrap();
        let new = Arc::new(json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e"}, "regarding": {"kind": "Kustomization", "name": "x"},
            "note": "suspended", "reason": "GateClosed", "reportingController": "fleetgate-spoke"}));
        let c = convert(&core, &new);
        assert_eq!(c["apiVersion"], "v1");
        assert_eq!(c["involvedObject"]["name"], "x");
        assert_eq!(c["message"], "suspended");
        assert_eq!(c["source"]["component"], "fleetgate-spoke");
        assert_eq!(convert(&ev, &c)["note"], "suspended");
        assert_eq!(twin_key(&core), Some("events.k8s.io/v1/events"));
    }
}
