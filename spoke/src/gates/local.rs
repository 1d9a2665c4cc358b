//! Gate objects as gates: the manifest a Gate object stands for (its name and
//! spec; the rest of its metadata is Kubernetes' business), validated with the
//! policy crate exactly as `fleetgate gate validate` and the hub do, and the
//! snapshot a standalone spoke builds from the valid ones.

use std::collections::BTreeMap;

use fleetgate_policy::{API_VERSION, Gate, KIND, parse_gate_json};
use serde_json::{Value, json};

use crate::hub::snapshot::{GateRule, Snapshot};

/// The gate manifest a Gate object named `name` with `spec` stands for.
pub fn manifest(name: &str, spec: &Value) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// A Gate object's spec as the gate it means in `cluster`: an omitted (or
/// null) `spec.clusters` means this cluster, as the CRD says (`kubectl explain
/// gate.spec.clusters`) and the RFC's examples, which have no such field,
/// assume. The hub, which gates many clusters, still requires it.
pub fn in_cluster(spec: &Value, cluster: &str) -> Value {
    let mut spec = spec.clone();
    if let Some(fields) = spec.as_object_mut()
        && fields.get("clusters").is_none_or(Value::is_null)
    {
        fields.insert("clusters".into(), json!({"names": [cluster]}));
    }
    spec
}

/// Parses and validates a Gate object's spec as the hub and the CLI do (text
/// the hub could not store, U+0000, included); the error names the field
/// (`spec.windows[0].schedule: ...`).
///
/// A `calendar.url` window is refused: the spoke makes no outbound calls (it
/// needs no egress beyond the Kubernetes API and its hub, and a feed's
/// credentials would live in every cluster); the hub fetches feeds for the
/// gates it sends. Inline `calendar.ics` works here.
pub fn validate(name: &str, spec: &Value) -> Result<Gate, String> {
    let gate = parse_gate_json(manifest(name, spec)).map_err(|e| e.to_string())?;
    gate.validate().map_err(|e| e.to_string())?;
    if let Some(i) = gate
        .spec
        .windows
        .iter()
        .position(|w| w.calendar.as_ref().is_some_and(|c| c.url.is_some()))
    {
        return Err(format!(
            "spec.windows[{i}].calendar.url: a Gate made in the cluster cannot use a calendar feed: the spoke makes no outbound calls; put the calendar inline (calendar.ics) or make the gate at the hub, which fetches feeds"
        ));
    }
    Ok(gate)
}

/// The last valid version of each Gate object in force on a standalone spoke.
#[derive(Debug, Default)]
pub struct InForce {
    /// name → (generation, manifest).
    gates: BTreeMap<String, (u64, Value)>,
    revision: u64,
}

impl InForce {
    /// Starts from a persisted snapshot: its gates are the last valid
    /// versions a previous run enforced, and revisions continue after its.
    pub fn seed(&mut self, persisted: &Snapshot) {
        self.revision = self.revision.max(persisted.revision);
        for rule in &persisted.gates {
            self.gates
                .entry(rule.name.clone())
                .or_insert_with(|| (rule.version, rule.manifest.clone()));
        }
    }

    /// Records a valid version (replacing an older one).
    pub fn set(&mut self, name: &str, generation: u64, spec: &Value) {
        self.gates
            .insert(name.to_owned(), (generation, manifest(name, spec)));
    }

    /// Drops a gate (its object is gone, or it no longer selects this cluster).
    pub fn remove(&mut self, name: &str) {
        self.gates.remove(name);
    }

    /// Keeps only the named gates.
    pub fn retain(&mut self, names: &std::collections::BTreeSet<&str>) {
        self.gates.retain(|n, _| names.contains(n.as_str()));
    }

    /// The snapshot for these gates; its revision goes up whenever the set of
    /// gates or any of their manifests differs from `current`.
    pub fn snapshot(&mut self, cluster: &str, current: Option<&Snapshot>) -> Option<Snapshot> {
        let gates: Vec<GateRule> = self
            .gates
            .iter()
            .map(|(name, (generation, manifest))| GateRule {
                name: name.clone(),
                version: *generation,
                manifest: manifest.clone(),
                // No hub releases waves here: a standalone Gate with `spec.rollout`
                // stays closed (fail-safe), saying why.
                release: None,
                waiting: None,
                opening_fence: None,
                calendars: Vec::new(),
            })
            .collect();
        if current.is_some_and(|c| c.gates == gates) {
            return None;
        }
        self.revision += 1;
        Some(Snapshot {
            revision: self.revision,
            cluster: cluster.to_owned(),
            gates,
            overrides: vec![],
            hub_time: None,
            local_gates_enforced: false,
            local_gates: vec![],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_feeds_are_refused_inline_calendars_accepted() {
        let ics = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nBEGIN:VEVENT\r\nUID:1\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20260102T000000Z\r\nDTEND:20260103T000000Z\r\nSUMMARY:Freeze\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
        let spec = |calendar: Value| {
            json!({"clusters": {"names": ["c"]}, "default": "open",
                   "windows": [{"name": "w", "kind": "deny", "calendar": calendar}]})
        };
        assert!(validate("g", &spec(json!({"ics": ics}))).is_ok());
        let err =
            validate("g", &spec(json!({"url": "https://cal.example.com/f.ics"}))).unwrap_err();
        assert!(err.starts_with("spec.windows[0].calendar.url: "), "{err}");
        assert!(err.contains("no outbound calls"), "{err}");
    }

    #[test]
    fn a_gate_without_clusters_means_this_cluster() {
        let spec = json!({"default": "closed"});
        assert!(
            validate("g", &spec).is_err(),
            "the hub's manifest needs clusters"
        );
        let here = in_cluster(&spec, "edge-1");
        let gate = validate("g", &here).unwrap();
        assert!(gate.spec.clusters.matches("edge-1", &BTreeMap::new()));
        assert!(!gate.spec.clusters.matches("edge-2", &BTreeMap::new()));
        let null = in_cluster(&json!({"clusters": null, "default": "open"}), "edge-1");
        assert_eq!(null["clusters"], json!({"names": ["edge-1"]}));
        // A scope that is there stays as written.
        let other = json!({"clusters": {"names": ["edge-2"]}, "default": "open"});
        assert_eq!(in_cluster(&other, "edge-1"), other);
    }

    #[test]
    fn errors_name_the_field_and_snapshots_change_only_with_the_gates() {
        let good = json!({"clusters": {"selector": {}}, "default": "closed", "window": "1h"});
        assert!(validate("sre-approval", &good).is_ok());
        let mut nul = good.clone();
        nul["description"] = json!("a\u{0}b");
        let err = validate("g", &nul).unwrap_err();
        assert!(
            err.starts_with("spec.description: contains U+0000"),
            "{err}"
        );
        let bad = json!({"clusters": {"selector": {}},
            "windows": [{"name": "w", "kind": "deny", "schedule": "61 * * * *", "duration": "1h"}]});
        let err = validate("g", &bad).unwrap_err();
        assert!(err.starts_with("spec.windows[0].schedule"), "{err}");
        let err =
            validate("g", &json!({"clusters": {"selector": {}}, "window": "9d"})).unwrap_err();
        assert!(err.starts_with("spec.window"), "{err}");

        let mut in_force = InForce::default();
        in_force.set("sre-approval", 1, &good);
        let s1 = in_force.snapshot("c1", None).unwrap();
        assert_eq!((s1.revision, s1.gates.len()), (1, 1));
        assert!(in_force.snapshot("c1", Some(&s1)).is_none());
        in_force.remove("sre-approval");
        let s2 = in_force.snapshot("c1", Some(&s1)).unwrap();
        assert_eq!((s2.revision, s2.gates.len()), (2, 0));

        // A restarted spoke seeded from the persisted snapshot keeps its
        // gates and continues its revisions.
        let mut restarted = InForce::default();
        restarted.seed(&s1);
        let s3 = restarted.snapshot("c1", None).unwrap();
        assert_eq!((s3.revision, s3.gates), (2, s1.gates.clone()));
    }
}
