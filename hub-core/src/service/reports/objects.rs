//! Checks and repairs of a report's objects, one object at a time: a report
//! is the cluster's own data, so one object's content never costs the rest of
//! the report. An object with text PostgreSQL cannot store (U+0000) is kept
//! with U+FFFD in its place; an object the hub cannot store at all (unknown
//! kind, empty or over-long key, odd values) is left out. Either way a
//! [`ReportProblem`] names the field, and the cluster's status lists it.

use std::collections::{BTreeMap, BTreeSet};

use fleetgate_policy::text;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use fleetgate_api_types::status::{ReportProblem, ReportProblems};

use crate::db::held_objects::HeldObject;
use crate::db::reports::{LocalGate, ReportedObject};

/// Most local gates one report may carry (more are left out).
pub const MAX_LOCAL_GATES: usize = 1000;

/// Longest kind, namespace, name or group stored (a Kubernetes object name
/// is at most 253 bytes; index entries must stay well under PostgreSQL's
/// ~2.7 KB limit).
pub const MAX_KEY_BYTES: usize = 253;

/// `replaced` or `dropped`.
fn problem(field: String, object: String, action: &str, message: String) -> ReportProblem {
    ReportProblem {
        field,
        object,
        action: action.to_string(),
        message,
    }
}

/// The problems a report's objects had, as the hub finds them.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Found(pub Vec<ReportProblem>);

impl Found {
    /// Records that the item at `field` (`object`) was left out.
    pub fn dropped(&mut self, field: String, object: String, message: impl Into<String>) {
        self.0
            .push(problem(field, object, "dropped", message.into()));
    }

    /// Replaces U+0000 in every string of `item` (at `field`, `object`),
    /// recording each field it changed. `check` says whether anything in
    /// the report needs it (the common case costs nothing per object).
    fn repair<T: Serialize + DeserializeOwned>(
        &mut self,
        item: T,
        check: bool,
        field: &str,
        object: &str,
    ) -> T {
        if !check {
            return item;
        }
        let Ok(mut value) = serde_json::to_value(&item) else {
            return item;
        };
        let changed = text::replace_json(&mut value);
        if changed.is_empty() {
            return item;
        }
        let Ok(repaired) = serde_json::from_value(value) else {
            return item;
        };
        for path in changed {
            self.0.push(problem(
                join(field, &snake_case(&path)),
                object.to_string(),
                "replaced",
                "U+0000 (NUL), which cannot be stored, replaced by U+FFFD".into(),
            ));
        }
        repaired
    }
}

/// Whether any string of `items` holds U+0000 (serde_json writes it `\u0000`;
/// a false positive only costs the per-object walk).
fn any_unstorable<T: Serialize>(items: &[T]) -> bool {
    serde_json::to_string(items).is_ok_and(|s| s.contains("\\u0000"))
}

fn join(field: &str, rest: &str) -> String {
    match rest {
        "" => field.to_string(),
        r if r.starts_with('[') => format!("{field}{r}"),
        r => format!("{field}.{r}"),
    }
}

/// `readyMessage` → `ready_message`: the report's (protobuf) spelling.
fn snake_case(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 4);
    for c in path.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A key field's problem: empty or over-long.
fn key_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        Some("must not be empty".into())
    } else if value.len() > MAX_KEY_BYTES {
        Some(format!("longer than {MAX_KEY_BYTES} bytes"))
    } else {
        None
    }
}

fn short(s: &str) -> String {
    s.chars().take(80).collect()
}

/// The report's objects, repaired, without the ones that cannot be stored
/// and without duplicates (the last one of a key wins).
pub fn objects(objects: Vec<ReportedObject>, found: &mut Found) -> Vec<ReportedObject> {
    let check = any_unstorable(&objects);
    let mut by_key: BTreeMap<(String, String, String), ReportedObject> = BTreeMap::new();
    for (i, o) in objects.into_iter().enumerate() {
        let at = format!("report.objects[{i}]");
        let object = format!(
            "{} {}/{}",
            short(&o.kind),
            short(&o.namespace),
            short(&o.name)
        );
        let o = found.repair(o, check, &at, &object);
        let bad = if o.kind.parse::<fleetgate_policy::FluxKind>().is_err() {
            Some(("kind", format!("unknown Flux kind '{}'", short(&o.kind))))
        } else if let Some(m) = key_problem(&o.namespace) {
            Some(("namespace", m))
        } else if let Some(m) = key_problem(&o.name) {
            Some(("name", m))
        } else if let Some(ready) = o.ready.as_deref()
            && !matches!(ready, "True" | "False" | "Unknown")
        {
            Some((
                "ready",
                format!(
                    "must be True, False, Unknown or empty, not '{}'",
                    short(ready)
                ),
            ))
        } else {
            None
        };
        if let Some((field, message)) = bad {
            found.dropped(format!("{at}.{field}"), object, message);
            continue;
        }
        by_key.insert((o.kind.clone(), o.namespace.clone(), o.name.clone()), o);
    }
    by_key.into_values().collect()
}

/// The report's held objects, repaired, without the ones that cannot be
/// stored and without duplicates (the last one of a key wins).
/// Each comes with its index in the report (for the field names).
pub fn held_objects(objects: Vec<(usize, HeldObject)>, found: &mut Found) -> Vec<HeldObject> {
    let check = objects
        .iter()
        .any(|(_, o)| any_unstorable(std::slice::from_ref(o)));
    let mut by_key: BTreeMap<(String, String, String, String), HeldObject> = BTreeMap::new();
    for (i, o) in objects {
        let at = format!("report.held_objects[{i}]");
        let object = format!(
            "{} {}/{}",
            short(&o.kind),
            short(&o.namespace),
            short(&o.name)
        );
        let o = found.repair(o, check, &at, &object);
        let keys = [
            ("kind", &o.kind, true),
            ("name", &o.name, true),
            ("kustomization_name", &o.kustomization_name, true),
            ("kustomization_namespace", &o.kustomization_namespace, true),
            ("group", &o.group, false),
            ("namespace", &o.namespace, false),
        ];
        let bad = keys.iter().find_map(|(field, v, required)| {
            let problem = if *required || !v.is_empty() {
                key_problem(v)
            } else {
                None
            };
            problem.map(|m| (*field, m))
        });
        if let Some((field, message)) = bad {
            found.dropped(format!("{at}.{field}"), object, message);
            continue;
        }
        let key = (
            o.group.clone(),
            o.kind.clone(),
            o.namespace.clone(),
            o.name.clone(),
        );
        by_key.insert(key, o);
    }
    by_key.into_values().collect()
}

/// A Kubernetes object name (DNS-1123 subdomain).
fn object_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_KEY_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// The report's local gates, repaired, ordered by name, without the ones
/// that are not valid (a bad name, a second one of a name, odd counts).
/// Each comes with its index in the report (for the field names).
pub fn local_gates(gates: Vec<(usize, LocalGate)>, found: &mut Found) -> Vec<LocalGate> {
    let check = gates
        .iter()
        .any(|(_, g)| any_unstorable(std::slice::from_ref(g)));
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(gates.len().min(MAX_LOCAL_GATES));
    for (i, g) in gates {
        let at = format!("report.local_gates[{i}]");
        let object = format!("Gate {}", short(&g.name));
        if i >= MAX_LOCAL_GATES {
            found.dropped(
                at,
                object,
                format!("more than {MAX_LOCAL_GATES} local gates in one report"),
            );
            continue;
        }
        let g = found.repair(g, check, &at, &object);
        let bad = if !object_name_ok(&g.name) {
            Some((
                "name",
                format!("'{}' is not a Kubernetes object name", short(&g.name)),
            ))
        } else if seen.contains(&g.name) {
            Some(("name", format!("'{}' is reported twice", g.name)))
        } else if !matches!(g.ready.as_str(), "True" | "False") {
            Some((
                "ready",
                format!("must be True or False, not '{}'", short(&g.ready)),
            ))
        } else if g.held > g.governed {
            Some((
                "held",
                format!("{} held of {} governed", g.held, g.governed),
            ))
        } else {
            None
        };
        if let Some((field, message)) = bad {
            found.dropped(format!("{at}.{field}"), object, message);
            continue;
        }
        seen.insert(g.name.clone());
        out.push(g);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(kind: &str, ns: &str, name: &str, held: bool) -> ReportedObject {
        ReportedObject {
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
            held,
            ..ReportedObject::default()
        }
    }

    #[test]
    fn duplicates_collapse_to_the_last() {
        let mut found = Found::default();
        let out = objects(
            vec![
                obj("Kustomization", "a", "x", false),
                obj("Kustomization", "a", "x", true),
                obj("HelmRelease", "a", "x", false),
            ],
            &mut found,
        );
        assert_eq!(out.len(), 2);
        assert!(out.iter().any(|o| o.kind == "Kustomization" && o.held));
        assert!(found.0.is_empty());
    }

    #[test]
    fn one_bad_object_is_left_out_and_named() {
        let mut found = Found::default();
        let mut maybe = obj("Kustomization", "a", "m", false);
        maybe.ready = Some("Maybe".into());
        let out = objects(
            vec![
                obj("Kustomization", "a", "x", false),
                obj("Deployment", "a", "y", false),
                obj("Kustomization", "a", "", false),
                maybe,
                obj("Kustomization", "a", &"n".repeat(254), false),
            ],
            &mut found,
        );
        assert_eq!(out.len(), 1);
        let fields: Vec<_> = found.0.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "report.objects[1].kind",
                "report.objects[2].name",
                "report.objects[3].ready",
                "report.objects[4].name"
            ]
        );
        assert!(found.0.iter().all(|p| p.action == "dropped"));
        assert_eq!(found.0[0].object, "Deployment a/y");
    }

    #[test]
    fn nul_is_replaced_and_recorded() {
        let mut found = Found::default();
        let mut bad = obj("Kustomization", "flux-system", "apps", false);
        bad.ready = Some("False".into());
        bad.ready_message = Some("kustomize build failed: bad byte \u{0} here".into());
        bad.gates = vec!["g\u{0}".into()];
        let out = objects(vec![obj("Kustomization", "a", "x", false), bad], &mut found);
        assert_eq!(out.len(), 2);
        let apps = out.iter().find(|o| o.name == "apps").unwrap();
        assert_eq!(
            apps.ready_message.as_deref(),
            Some("kustomize build failed: bad byte \u{FFFD} here")
        );
        assert_eq!(apps.gates, ["g\u{FFFD}"]);
        let mut fields: Vec<_> = found.0.iter().map(|p| p.field.as_str()).collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            [
                "report.objects[1].gates[0]",
                "report.objects[1].ready_message"
            ]
        );
        assert!(found.0.iter().all(|p| p.action == "replaced"));
        // A NUL in a key is replaced too (the object is kept under it).
        let mut found = Found::default();
        let out = objects(vec![obj("Kustomization", "a", "x\u{0}", false)], &mut found);
        assert_eq!(out[0].name, "x\u{FFFD}");
    }

    fn held(kind: &str, name: &str, ks: &str) -> HeldObject {
        HeldObject {
            group: "apps".into(),
            kind: kind.into(),
            namespace: "web".into(),
            name: name.into(),
            kustomization_namespace: "flux-system".into(),
            kustomization_name: ks.into(),
            gates: vec!["g".into()],
            held_by: vec![],
            held_by_person: false,
            held_since_revision: None,
            held_since: None,
            newer_revision_applied: false,
            not_permitted: false,
            ..HeldObject::default()
        }
    }

    #[test]
    fn held_objects_are_checked_and_deduplicated() {
        let mut second = held("Deployment", "nginx", "apps");
        second.held_by = vec!["g".into()];
        let mut found = Found::default();
        let out = held_objects(
            vec![
                (0, held("Deployment", "nginx", "apps")),
                (1, second),
                (3, held("Deployment", "x", "")),
            ],
            &mut found,
        );
        assert_eq!(out.len(), 1);
        assert!(out[0].is_held());
        assert_eq!(
            found.0[0].field,
            "report.held_objects[3].kustomization_name"
        );
    }

    #[test]
    fn local_gates_are_checked_and_ordered() {
        let g = |name: &str| LocalGate {
            name: name.into(),
            ready: "True".into(),
            ..LocalGate::default()
        };
        let mut over = g("c");
        over.held = 2;
        over.governed = 1;
        let mut found = Found::default();
        let gates = vec![g("b"), g("a.freeze"), g("b"), g("-a"), over];
        let out = local_gates(gates.into_iter().enumerate().collect(), &mut found);
        let names: Vec<_> = out.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["a.freeze", "b"]);
        let fields: Vec<_> = found.0.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "report.local_gates[2].name",
                "report.local_gates[3].name",
                "report.local_gates[4].held"
            ]
        );
    }
}
