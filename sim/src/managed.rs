//! `metadata.managedFields` entries: reading and writing them on objects, and recording
//! which manager changed which fields on Update operations (field ownership moves to the
//! last writer of a field, as in k8s.io/apimachinery/pkg/util/managedfields).

use serde_json::{Value, json};

use crate::fields::{self, FieldSet, Scope};

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub manager: String,
    pub operation: String,
    pub subresource: String,
    pub api_version: String,
    pub time: String,
    pub set: FieldSet,
}

impl Entry {
    fn same_owner(&self, manager: &str, operation: &str, subresource: &str) -> bool {
        self.manager == manager && self.operation == operation && self.subresource == subresource
    }
}

pub fn read(obj: &Value) -> Vec<Entry> {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| Entry {
            manager: s(&e["manager"]),
            operation: s(&e["operation"]),
            subresource: s(&e["subresource"]),
            api_version: s(&e["apiVersion"]),
            time: s(&e["time"]),
            set: fields::from_fields_v1(&e["fieldsV1"]),
        })
        .collect()
}

pub fn write(obj: &mut Value, entries: &[Entry]) {
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.set.is_empty())
        .map(|e| {
            let mut v = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": fields::to_fields_v1(&e.set),
            });
            if !e.subresource.is_empty() {
                v["subresource"] = json!(e.subresource);
            }
            v
        })
        .collect();
    if list.is_empty() {
        if let Some(m) = obj["metadata"].as_object_mut() {
            m.remove("managedFields");
        }
    } else {
        obj["metadata"]["managedFields"] = Value::Array(list);
    }
}

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Who wrote what in an Update (create/update/patch) of `new` over `old`.
pub struct Writer<'a> {
    pub manager: &'a str,
    pub subresource: &'a str,
    pub scope: Scope,
    pub api_version: &'a str,
}

/// Records an Update operation: the writer gains the fields it changed, other managers
/// lose them. Entries start from `old`'s (clients cannot rewrite history in the body).
pub fn record_update(old: Option<&Value>, new: &mut Value, w: &Writer<'_>) {
    let mut entries = old.map(read).unwrap_or_default();
    let before = entries.clone();
    let changed = match old {
        Some(o) => fields::changed(o, new, w.scope),
        None => fields::leaves(new, w.scope),
    };
    for e in entries.iter_mut() {
        if e.same_owner(w.manager, "Update", w.subresource) {
            continue;
        }
        e.set
            .retain(|p| !changed.iter().any(|c| fields::overlaps(p, c)));
    }
    let gained: FieldSet = changed
        .iter()
        .filter(|p| fields::is_leaf(new, p))
        .cloned()
        .collect();
    match entries
        .iter_mut()
        .find(|e| e.same_owner(w.manager, "Update", w.subresource))
    {
        Some(e) => {
            let before = e.set.clone();
            e.set.extend(gained);
            e.set.retain(|p| fields::is_leaf(new, p));
            if e.set != before {
                e.time = now();
            }
        }
        None if !gained.is_empty() => entries.push(Entry {
            manager: w.manager.into(),
            operation: "Update".into(),
            subresource: w.subresource.into(),
            api_version: w.api_version.into(),
            time: now(),
            set: gained,
        }),
        None => {}
    }
    match old {
        // Ownership did not move (e.g. a manager re-setting fields it owns): the stored
        // entries stand as they are, without encoding them again.
        Some(old) if entries == before => match old["metadata"].get("managedFields") {
            Some(mf) => new["metadata"]["managedFields"] = mf.clone(),
            None => write(new, &entries),
        },
        _ => write(new, &entries),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> Vec<String> {
        p.split('.').map(String::from).collect()
    }

    #[test]
    fn update_moves_ownership_to_last_writer() {
        let w = |m| Writer {
            manager: m,
            subresource: "",
            scope: Scope::NoStatus,
            api_version: "v1",
        };
        let mut a = json!({"metadata": {"name": "x"}, "spec": {"a": 1, "b": 2}});
        record_update(None, &mut a, &w("alice"));
        let mut b = a.clone();
        b["spec"]["b"] = json!(3);
        record_update(Some(&a), &mut b, &w("bob"));
        let entries = read(&b);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].set, FieldSet::from([path("spec.a")]));
        assert_eq!(entries[1].manager, "bob");
        assert_eq!(entries[1].set, FieldSet::from([path("spec.b")]));

        // Bob writes again what he owns (and a forged history): nothing moves, the
        // stored entries stand, byte for byte.
        let mut c = b.clone();
        c["metadata"]["managedFields"] = json!([{"manager": "mallory"}]);
        record_update(Some(&b), &mut c, &w("bob"));
        assert_eq!(
            c["metadata"]["managedFields"],
            b["metadata"]["managedFields"]
        );
        // Alice takes spec.b: re-encoded with the move.
        let mut d = b.clone();
        d["spec"]["b"] = json!(4);
        record_update(Some(&b), &mut d, &w("alice"));
        let entries = read(&d);
        assert_eq!(entries.len(), 1, "bob's emptied entry is dropped");
        assert_eq!(
            entries[0].set,
            FieldSet::from([path("spec.a"), path("spec.b")])
        );
    }
}
