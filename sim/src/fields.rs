//! Field ownership for `metadata.managedFields`: sets of leaf paths, their `FieldsV1`
//! encoding, and the ownership bookkeeping of Update operations. A faithful-enough subset
//! of structured-merge-diff: maps are granular, lists are atomic leaves.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

pub type Path = Vec<String>;
pub type FieldSet = BTreeSet<Path>;

/// Metadata fields the server owns; never tracked as managed (fieldmanager strips them).
const SERVER_META: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "generateName",
];

/// Which part of the object a write may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Everything (no status subresource).
    All,
    /// Everything but `status` (main resource of a type with a status subresource).
    NoStatus,
    /// Only `status` (the `/status` subresource).
    Status,
}

/// Whether the top-level field `key` belongs to `scope` (`apiVersion` and
/// `kind` never do: they are not owned fields).
fn in_scope(key: &str, scope: Scope) -> bool {
    match (key, scope) {
        ("apiVersion" | "kind", _) => false,
        ("status", Scope::NoStatus) => false,
        ("status", _) => true,
        (_, Scope::Status) => false,
        _ => true,
    }
}

/// Leaf paths of an object, within `scope`.
pub fn leaves(obj: &Value, scope: Scope) -> FieldSet {
    let mut out = FieldSet::new();
    let Some(map) = obj.as_object() else {
        return out;
    };
    for (k, v) in map {
        if !in_scope(k, scope) {
            continue;
        }
        if k == "metadata" {
            for (mk, mv) in v.as_object().into_iter().flatten() {
                if !SERVER_META.contains(&mk.as_str()) {
                    collect(mv, vec!["metadata".into(), mk.clone()], &mut out);
                }
            }
        } else {
            collect(v, vec![k.clone()], &mut out);
        }
    }
    out
}

fn collect(v: &Value, path: Path, out: &mut FieldSet) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, child) in m {
                let mut p = path.clone();
                p.push(k.clone());
                collect(child, p, out);
            }
        }
        _ => {
            out.insert(path);
        }
    }
}

/// The value at `path`, if present.
pub fn get<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |cur, k| cur.as_object()?.get(k))
}

/// Sets `value` at `path`, creating intermediate maps.
pub fn set(obj: &mut Value, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = obj;
    for k in parents {
        if !cur.get(k).is_some_and(Value::is_object) {
            cur[k.as_str()] = Value::Object(Map::new());
        }
        cur = &mut cur[k.as_str()];
    }
    cur[last.as_str()] = value;
}

/// Removes the value at `path` and any maps left empty above it.
pub fn remove(obj: &mut Value, path: &[String]) {
    fn rec(cur: &mut Value, path: &[String]) -> bool {
        let Some(map) = cur.as_object_mut() else {
            return false;
        };
        match path {
            [] => false,
            [k] => {
                map.remove(k);
                map.is_empty()
            }
            [k, rest @ ..] => {
                let now_empty = map.get_mut(k).is_some_and(|c| rec(c, rest));
                if now_empty {
                    map.remove(k);
                }
                map.is_empty()
            }
        }
    }
    rec(obj, path);
}

/// Encodes a set as `FieldsV1` (`{"f:spec":{"f:suspend":{}}}`).
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Value::Object(Map::new());
    for path in set {
        let mut cur = &mut root;
        for k in path {
            let key = format!("f:{k}");
            if cur.get(&key).is_none() {
                cur[key.as_str()] = json!({});
            }
            cur = &mut cur[key.as_str()];
        }
    }
    root
}

/// The `f:` children a `FieldsV1` node is decoded through, or `None` where decoding
/// stops: a node with no `f:` children, or with any other key (list items `k:`/`v:`/`i:`,
/// `.`). Below the root, such a node is one of the set's paths.
fn v1_children(node: &Value) -> Option<&Map<String, Value>> {
    node.as_object()
        .filter(|m| !m.is_empty() && m.keys().all(|k| k.starts_with("f:")))
}

/// Decodes `FieldsV1`; list-item keys (`k:`/`v:`/`i:`) collapse onto their list.
pub fn from_fields_v1(v: &Value) -> FieldSet {
    fn rec(v: &Value, path: Path, out: &mut FieldSet) {
        match v1_children(v) {
            Some(children) => {
                for (k, child) in children {
                    let mut p = path.clone();
                    p.push(k[2..].to_string());
                    rec(child, p, out);
                }
            }
            None if !path.is_empty() => {
                out.insert(path);
            }
            None => {}
        }
    }
    let mut out = FieldSet::new();
    rec(v, Vec::new(), &mut out);
    out
}

/// Paths whose values differ between `old` and `new` (added, removed or changed leaves):
/// the leaves of either side (as [`leaves`] finds them) whose values differ. Walks both
/// objects together and skips equal subtrees, instead of collecting every leaf of both.
pub fn changed(old: &Value, new: &Value, scope: Scope) -> FieldSet {
    let mut out = FieldSet::new();
    let empty = Map::new();
    let (mo, mn) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let keys: BTreeSet<&String> = mo.keys().chain(mn.keys()).collect();
    for k in keys {
        if !in_scope(k, scope) {
            continue;
        }
        let (vo, vn) = (mo.get(k), mn.get(k));
        if k == "metadata" {
            let (meta_o, meta_n) = (
                vo.and_then(Value::as_object).unwrap_or(&empty),
                vn.and_then(Value::as_object).unwrap_or(&empty),
            );
            let mkeys: BTreeSet<&String> = meta_o.keys().chain(meta_n.keys()).collect();
            for mk in mkeys {
                if !SERVER_META.contains(&mk.as_str()) {
                    let path = vec!["metadata".to_string(), mk.clone()];
                    diff(meta_o.get(mk), meta_n.get(mk), path, &mut out);
                }
            }
        } else {
            diff(vo, vn, vec![k.clone()], &mut out);
        }
    }
    out
}

/// A value's children when [`collect`] descends into it (a non-empty map).
fn branch(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object).filter(|m| !m.is_empty())
}

/// [`changed`] below `path`: `path` itself when either side has a leaf there and the
/// values differ, then the children of whichever side branches there.
fn diff(old: Option<&Value>, new: Option<&Value>, path: Path, out: &mut FieldSet) {
    if old == new {
        return;
    }
    let (bo, bn) = (branch(old), branch(new));
    let leaf_o = old.is_some() && bo.is_none();
    let leaf_n = new.is_some() && bn.is_none();
    if leaf_o || leaf_n {
        out.insert(path.clone());
    }
    let keys: BTreeSet<&String> = bo
        .into_iter()
        .flat_map(|m| m.keys())
        .chain(bn.into_iter().flat_map(|m| m.keys()))
        .collect();
    for k in keys {
        let mut p = path.clone();
        p.push(k.clone());
        diff(bo.and_then(|m| m.get(k)), bn.and_then(|m| m.get(k)), p, out);
    }
}

/// Whether `path` is one of `obj`'s leaves in `Scope::All` (`leaves(obj, All)` contains
/// it), without collecting them all.
pub fn is_leaf(obj: &Value, path: &[String]) -> bool {
    let Some(top) = path.first() else {
        return false;
    };
    if matches!(top.as_str(), "apiVersion" | "kind") {
        return false;
    }
    if top == "metadata"
        && path
            .get(1)
            .is_none_or(|m| SERVER_META.contains(&m.as_str()))
    {
        return false;
    }
    get(obj, path).is_some_and(|v| branch(Some(v)).is_none())
}

/// Whether the set `fields_v1` encodes (as [`from_fields_v1`] decodes it) holds a path
/// that [`overlaps`] `path`, read from the encoding without decoding it.
pub fn fields_v1_overlaps(fields_v1: &Value, path: &[String]) -> bool {
    let mut node = fields_v1;
    for (depth, key) in path.iter().enumerate() {
        let Some(children) = v1_children(node) else {
            // Decoding stops here: below the root, a path that is a prefix of `path`.
            return depth > 0;
        };
        match children.get(&format!("f:{key}")) {
            Some(child) => node = child,
            None => return false,
        }
    }
    // `path` itself, or (a branch node) paths below it.
    !path.is_empty()
}

/// True if `a` is `b` or lies under `b` (or vice versa): overlapping ownership.
pub fn overlaps(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_v1_round_trip_and_changes() {
        let old = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "a", "labels": {"l": "1"}},
            "spec": {"suspend": false, "list": [1, 2], "empty": {}}, "status": {"x": 1}});
        let set = leaves(&old, Scope::NoStatus);
        assert_eq!(set.len(), 4);
        let enc = to_fields_v1(&set);
        assert_eq!(enc["f:spec"]["f:suspend"], json!({}));
        assert_eq!(from_fields_v1(&enc), set);
        let mut new = old.clone();
        new["spec"]["suspend"] = json!(true);
        new["status"]["x"] = json!(2);
        let ch = changed(&old, &new, Scope::NoStatus);
        assert_eq!(
            ch,
            FieldSet::from([vec!["spec".to_string(), "suspend".to_string()]])
        );
        // The walk agrees with the definition: differing leaves of either side.
        let mut other = old.clone();
        other["spec"]["empty"] = json!({"x": {"y": 1}});
        other["spec"]["list"] = json!({"k": 1});
        other["metadata"]["labels"] = json!("flat");
        other["metadata"]["uid"] = json!("u");
        for scope in [Scope::All, Scope::NoStatus, Scope::Status] {
            for (a, b) in [(&old, &other), (&other, &old), (&old, &new), (&new, &other)] {
                let (la, lb) = (leaves(a, scope), leaves(b, scope));
                let want: FieldSet = la
                    .union(&lb)
                    .filter(|p| get(a, p) != get(b, p))
                    .cloned()
                    .collect();
                assert_eq!(changed(a, b, scope), want, "{scope:?}");
            }
        }
        for o in [&old, &new, &other] {
            let all = leaves(o, Scope::All);
            for p in all.iter().chain(leaves(&other, Scope::All).iter()) {
                assert_eq!(is_leaf(o, p), all.contains(p), "{p:?}");
            }
            assert!(!is_leaf(o, &["metadata".into()]));
            assert!(!is_leaf(o, &["kind".into()]));
        }
        // Overlap read from the encoding agrees with the decoded set.
        let mut odd = to_fields_v1(&leaves(&other, Scope::All));
        odd["f:spec"]["f:list"] = json!({".": {}, "k:{\"a\":1}": {"f:b": {}}});
        odd["f:metadata"]["f:labels"] = json!({"f:l": {}, "f:m": {"f:n": {}}});
        let decoded = from_fields_v1(&odd);
        let probes = [
            "spec",
            "spec.list",
            "spec.list.a",
            "spec.empty",
            "spec.empty.x",
            "spec.empty.x.y",
            "spec.empty.x.y.z",
            "spec.nope",
            "metadata",
            "metadata.labels",
            "metadata.labels.m",
            "metadata.labels.m.n.o",
            "metadata.labels.z",
            "status",
            "status.x",
            "kind",
        ];
        for enc in [&odd, &enc, &json!({}), &json!({".": {}})] {
            let set = from_fields_v1(enc);
            for probe in probes {
                let p: Path = probe.split('.').map(String::from).collect();
                let want = set.iter().any(|q| overlaps(q, &p));
                assert_eq!(fields_v1_overlaps(enc, &p), want, "{probe} in {enc}");
            }
        }
        assert!(!decoded.is_empty());
        remove(&mut new, &["metadata".into(), "labels".into(), "l".into()]);
        assert!(new["metadata"].get("labels").is_none());
        super::set(&mut new, &["spec".into(), "a".into(), "b".into()], json!(1));
        assert_eq!(new["spec"]["a"]["b"], 1);
    }
}
