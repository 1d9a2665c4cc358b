//! The status the spoke keeps on a Gate object, computed purely from what it
//! decided: the `Opened` condition (reason = the rule that decided, message =
//! the evaluator's reason text), `Ready` (kstatus; False names the invalid
//! field), `Stalled` for an invalid spec, `nextTransition`, the objects
//! governed/held/suspended, and the requests handled.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

use super::requests::{Action, Handled};

/// The state of an enforced gate on this cluster at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    pub open: bool,
    /// CamelCase rule: DenyWindow, AllowWindow, Override, OpenRequested, CloseRequested, Default.
    pub reason: &'static str,
    pub message: String,
    pub next_transition: Option<DateTime<Utc>>,
    pub governed: usize,
    pub held: usize,
    pub suspended: usize,
    /// `spec.enforcement: warn`: closed holds nothing (transition Events say "would").
    pub warn: bool,
    /// Governed objects it would suspend if enforced (a warn gate while closed).
    pub would_suspend: usize,
}

/// What the spoke made of one Gate object.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Valid and in force.
    Enforced(Facts),
    /// The spec is invalid (`message` names the field). `previous` is the last
    /// valid version's state, still in force: an invalid edit changes nothing.
    Invalid {
        message: String,
        previous: Option<Facts>,
    },
    /// Valid but not enforced here (`reason`: OtherCluster, NotEnforced).
    Skipped {
        ready: bool,
        reason: &'static str,
        message: String,
    },
}

/// The rest of the status.
pub struct Extra<'a> {
    pub generation: Option<i64>,
    pub revision: u64,
    /// `hub` or `local`.
    pub origin: &'static str,
    pub requests: &'a BTreeMap<Action, Handled>,
}

/// Every top-level status field the spoke writes: absent ones are sent as
/// `null` so a merge patch removes what no longer applies.
const FIELDS: &[&str] = &[
    "observedGeneration",
    "conditions",
    "nextTransition",
    "governed",
    "held",
    "suspended",
    "wouldSuspend",
    "revision",
    "origin",
    "openRequest",
    "closeRequest",
];

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A metav1.Condition; its lastTransitionTime moves only when status changes.
fn condition(
    current: &Value,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: DateTime<Utc>,
) -> Value {
    let status = if status { "True" } else { "False" };
    condition_of(current, type_, status, reason, message, generation, now)
}

/// [`condition`] with the status as Kubernetes writes it (`True`, `False`, `Unknown`).
fn condition_of(
    current: &Value,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: DateTime<Utc>,
) -> Value {
    let since = find_condition(current, type_)
        .filter(|c| c["status"] == status)
        .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_owned))
        .unwrap_or_else(|| rfc3339(now));
    // metav1.Condition's message: at most 32768 characters (the CRD's maxLength).
    let message = crate::cluster::text::fit_text(message, 32768);
    let mut c = json!({
        "type": type_, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": since,
    });
    if let Some(g) = generation {
        c["observedGeneration"] = json!(g);
    }
    c
}

/// The condition `type_` in a status value.
pub fn find_condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// The desired status (without nulls) given the current one.
pub fn desired(current: &Value, verdict: &Verdict, extra: &Extra<'_>, now: DateTime<Utc>) -> Value {
    let g = extra.generation;
    let mut conditions = Vec::new();
    let mut out = Map::new();
    let facts = match verdict {
        Verdict::Enforced(f) => Some(f),
        Verdict::Invalid { previous, .. } => previous.as_ref(),
        Verdict::Skipped { .. } => None,
    };
    if let Some(f) = facts {
        conditions.push(condition(
            current, "Opened", f.open, f.reason, &f.message, g, now,
        ));
        if let Some(t) = f.next_transition {
            out.insert("nextTransition".into(), json!(rfc3339(t)));
        }
        out.insert("governed".into(), json!(f.governed));
        out.insert("held".into(), json!(f.held));
        out.insert("suspended".into(), json!(f.suspended));
        if f.warn {
            out.insert("wouldSuspend".into(), json!(f.would_suspend));
        }
    }
    if facts.is_none() {
        // Nothing of this gate is in force (invalid from the start, another cluster's, not
        // enforced): `Opened` is Unknown with the reason, so `kubectl get gates` shows it in
        // its OPEN and REASON columns instead of leaving them blank.
        let (reason, message) = match verdict {
            Verdict::Invalid { message, .. } => ("InvalidSpec", message.as_str()),
            Verdict::Skipped {
                reason, message, ..
            } => (*reason, message.as_str()),
            Verdict::Enforced(_) => ("Enforced", ""),
        };
        conditions.push(condition_of(
            current, "Opened", "Unknown", reason, message, g, now,
        ));
    }
    match verdict {
        Verdict::Enforced(f) => {
            let message = format!("gate in force: {}", f.message);
            conditions.push(condition(
                current, "Ready", true, "Enforced", &message, g, now,
            ));
        }
        Verdict::Invalid { message, previous } => {
            let kept = if previous.is_some() {
                "; the last valid version stays in force"
            } else {
                "; nothing is enforced for this gate"
            };
            let message = format!("{message}{kept}");
            conditions.push(condition(
                current,
                "Ready",
                false,
                "InvalidSpec",
                &message,
                g,
                now,
            ));
            conditions.push(condition(
                current,
                "Stalled",
                true,
                "InvalidSpec",
                &message,
                g,
                now,
            ));
        }
        Verdict::Skipped {
            ready,
            reason,
            message,
        } => {
            conditions.push(condition(current, "Ready", *ready, reason, message, g, now));
        }
    }
    out.insert("conditions".into(), Value::Array(conditions));
    if let Some(g) = g {
        out.insert("observedGeneration".into(), json!(g));
    }
    out.insert("revision".into(), json!(extra.revision));
    out.insert("origin".into(), json!(extra.origin));
    for (action, handled) in extra.requests {
        out.insert(
            action.status_field().into(),
            serde_json::to_value(handled).unwrap_or(Value::Null),
        );
    }
    Value::Object(out)
}

/// The merge patch turning `current` into `desired`, or `None` when equal.
pub fn patch(current: &Value, desired: &Value) -> Option<Value> {
    if current == desired {
        return None;
    }
    let mut status = desired.as_object().cloned().unwrap_or_default();
    for f in FIELDS {
        if !status.contains_key(*f) && !current[*f].is_null() {
            status.insert((*f).into(), Value::Null);
        }
    }
    Some(json!({ "status": status }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().to_utc()
    }

    fn facts(open: bool) -> Facts {
        Facts {
            open,
            reason: if open { "AllowWindow" } else { "Default" },
            message: "m".into(),
            next_transition: Some(at("2026-11-27T10:00:00Z")),
            governed: 3,
            held: 1,
            suspended: 2,
            warn: false,
            would_suspend: 0,
        }
    }

    #[test]
    fn conditions_keep_their_transition_time_until_the_status_changes() {
        let requests = BTreeMap::new();
        let extra = Extra {
            generation: Some(2),
            revision: 7,
            origin: "local",
            requests: &requests,
        };
        let t0 = at("2026-11-24T10:00:00Z");
        let s0 = desired(&Value::Null, &Verdict::Enforced(facts(false)), &extra, t0);
        assert_eq!(
            find_condition(&s0, "Opened").unwrap()["lastTransitionTime"],
            "2026-11-24T10:00:00Z"
        );
        assert_eq!(s0["held"], 1);
        assert_eq!(s0["nextTransition"], "2026-11-27T10:00:00Z");
        let t1 = at("2026-11-24T10:05:00Z");
        let same = desired(&s0, &Verdict::Enforced(facts(false)), &extra, t1);
        assert_eq!(same, s0);
        assert!(patch(&s0, &same).is_none(), "no write when nothing changed");
        let flipped = desired(&s0, &Verdict::Enforced(facts(true)), &extra, t1);
        let c = find_condition(&flipped, "Opened").unwrap();
        assert_eq!(
            (c["status"].as_str(), c["lastTransitionTime"].as_str()),
            (Some("True"), Some("2026-11-24T10:05:00Z"))
        );
        assert_eq!(c["reason"], "AllowWindow");
    }

    #[test]
    fn invalid_spec_names_the_field_and_keeps_the_previous_state() {
        let requests = BTreeMap::new();
        let extra = Extra {
            generation: Some(3),
            revision: 1,
            origin: "local",
            requests: &requests,
        };
        let now = at("2026-11-24T10:00:00Z");
        let v = Verdict::Invalid {
            message: "spec.windows[0].schedule: bad cron".into(),
            previous: Some(facts(false)),
        };
        let s = desired(&Value::Null, &v, &extra, now);
        let ready = find_condition(&s, "Ready").unwrap();
        assert_eq!(ready["status"], "False");
        assert!(
            ready["message"]
                .as_str()
                .unwrap()
                .starts_with("spec.windows[0].schedule")
        );
        assert_eq!(find_condition(&s, "Stalled").unwrap()["status"], "True");
        assert_eq!(find_condition(&s, "Opened").unwrap()["status"], "False");

        let skipped = Verdict::Skipped {
            ready: true,
            reason: "OtherCluster",
            message: "spec.clusters does not select this cluster".into(),
        };
        let s2 = desired(&s, &skipped, &extra, now);
        let opened = find_condition(&s2, "Opened").unwrap();
        assert_eq!(
            (&opened["status"], &opened["reason"]),
            (&json!("Unknown"), &json!("OtherCluster"))
        );

        // Invalid from the start: `kubectl get gates` shows Unknown / InvalidSpec, not blanks.
        let first = Verdict::Invalid {
            message: "spec: missing field `default`".into(),
            previous: None,
        };
        let s3 = desired(&Value::Null, &first, &extra, now);
        let opened = find_condition(&s3, "Opened").unwrap();
        assert_eq!(
            (&opened["status"], &opened["reason"]),
            (&json!("Unknown"), &json!("InvalidSpec"))
        );
        assert!(
            opened["message"]
                .as_str()
                .unwrap()
                .contains("missing field"),
            "{opened}"
        );
        let p = patch(&s, &s2).unwrap();
        assert!(
            p["status"]["held"].is_null() && p["status"].get("held").is_some(),
            "stale counts removed"
        );
    }

    /// Every status field the spoke writes is declared in the CRD it ships:
    /// the API server prunes undeclared ones, and the spoke would then find
    /// the status different on every pass and write it again.
    #[test]
    fn every_written_field_is_in_the_crd_schema() {
        let crd: Value = fleetgate_policy::yaml::from_str(include_str!(
            "../../../deploy/spoke/gates.fleetgate.io.yaml"
        ))
        .unwrap();
        let schema =
            &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"];
        let handled = Handled {
            requested_at: "2026-11-24T10:00:00Z".into(),
            expires_at: Some("2026-11-24T11:00:00Z".into()),
            reason: "r".into(),
            requested_by: "alice".into(),
            accepted: true,
            message: "m".into(),
            acknowledged: true,
            cancelled: true,
        };
        let requests = BTreeMap::from([(Action::Open, handled.clone()), (Action::Close, handled)]);
        let extra = Extra {
            generation: Some(1),
            revision: 1,
            origin: "hub",
            requests: &requests,
        };
        let status = desired(
            &Value::Null,
            &Verdict::Enforced(facts(true)),
            &extra,
            at("2026-11-24T10:00:00Z"),
        );
        fn check(schema: &Value, v: &Value, path: &str) {
            match v {
                Value::Object(m) => {
                    for (k, child) in m {
                        let s = &schema["properties"][k];
                        assert!(!s.is_null(), "status{path}.{k} is not in the CRD schema");
                        check(s, child, &format!("{path}.{k}"));
                    }
                }
                Value::Array(items) => items.iter().for_each(|i| check(&schema["items"], i, path)),
                _ => {}
            }
        }
        check(schema, &status, "");
        assert!(FIELDS.iter().all(|f| !schema["properties"][*f].is_null()));
    }
}
