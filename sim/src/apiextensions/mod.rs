//! `apiextensions.k8s.io/v1` CustomResourceDefinitions: the controllers kube-apiserver's
//! apiextensions-apiserver runs on them (naming, establishing, finalizer), run right
//! after every CRD write instead of from an informer, and the registry rebuild that
//! makes an established CRD served (customresource_handler.go). The strategy (defaults,
//! validation) is in [`strategy`], the CRDs seeded at start in [`seed`].

pub(crate) mod crd_object;
pub mod seed;
pub mod strategy;

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, TryLockError};

use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::crd::{Registry, ResourceType};
use crate::error::Error;
use crate::ops::{self, Sub, Track, WriteOpts};

pub use crate::crd::is_crd;
pub use crd_object::{CLEANUP_FINALIZER, CRD_KEY, GROUP, condition_is, set_condition};

/// The field manager of the controllers' status writes (their loopback client).
const MANAGER: &str = "kube-apiserver";

/// Runs the controllers after a CRD write (or the removal of an object of a terminating
/// CRD). A write made while they run (their own status writes included) marks them dirty
/// and they run again, so no change is missed and nothing recurses.
pub fn after_write(cluster: &Cluster) {
    cluster.crd_dirty.store(true, Ordering::SeqCst);
    loop {
        let guard = match cluster.crd_sync.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return, // the running pass sees the flag
        };
        while cluster.crd_dirty.swap(false, Ordering::SeqCst) {
            sync(cluster);
        }
        drop(guard);
        if !cluster.crd_dirty.load(Ordering::SeqCst) {
            return;
        }
    }
}

fn crds(cluster: &Cluster) -> Vec<Arc<Value>> {
    cluster.store.with(|s| s.list(CRD_KEY, None, None))
}

fn opts() -> WriteOpts {
    WriteOpts {
        manager: MANAGER.into(),
        ..WriteOpts::default()
    }
}

/// One pass of every controller over every CRD, then the registry rebuild.
fn sync(cluster: &Cluster) {
    let Some(crd_rt) = cluster
        .registry()
        .lookup(GROUP, "v1", "customresourcedefinitions")
    else {
        return;
    };
    let now = crate::managed::now();
    for crd in crds(cluster) {
        if crd["metadata"].get("deletionTimestamp").is_some()
            && has_finalizer(&crd, CLEANUP_FINALIZER)
        {
            finalize(cluster, &crd_rt, &crd, &now);
        }
    }
    let all = crds(cluster);
    for crd in &all {
        if let Some(status) = naming(crd, &all, &now) {
            write_status(cluster, &crd_rt, crd, status);
        }
    }
    for crd in crds(cluster) {
        // establishing_controller.go, sync: names accepted, not yet established.
        if condition_is(&crd, "NamesAccepted", "True") && !condition_is(&crd, "Established", "True")
        {
            let mut next = (*crd).clone();
            set_condition(
                &mut next,
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
                &now,
            );
            write_status(cluster, &crd_rt, &crd, next["status"].take());
        }
    }
    let registry = Registry::build(&crds(cluster), Some(&cluster.registry()));
    cluster.set_registry(registry);
}

fn write_status(cluster: &Cluster, crd_rt: &ResourceType, crd: &Value, status: Value) {
    let mut body = crd.clone();
    body["status"] = status;
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    match ops::update(
        cluster,
        crd_rt,
        "",
        name,
        body,
        Sub::Status,
        &opts(),
        Track::Update,
        None,
    ) {
        Ok(_) => {}
        // Changed or deleted meanwhile: that write marked the controllers dirty.
        Err(Error::Api(s)) if matches!(s.reason, "Conflict" | "NotFound") => {}
        Err(e) => tracing::warn!(crd = name, error = %e, "CRD status update failed"),
    }
}

fn has_finalizer(obj: &Value, finalizer: &str) -> bool {
    obj["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}

/// naming_controller.go, calculateNamesAndConditions and sync: accept each requested
/// name unless another CRD of the group has accepted it; the new status, if it changes.
fn naming(crd: &Value, all: &[Arc<Value>], now: &str) -> Option<Value> {
    let requested = &crd["spec"]["names"];
    let accepted = &crd["status"]["acceptedNames"];
    if names_equal(requested, accepted) {
        return None;
    }
    let group = &crd["spec"]["group"];
    let mut resources = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    for other in all.iter().filter(|o| o["spec"]["group"] == *group) {
        let n = &other["status"]["acceptedNames"];
        for f in ["plural", "singular"] {
            resources.insert(str_of(&n[f]));
        }
        resources.extend(strings(&n["shortNames"]));
        for f in ["kind", "listKind"] {
            kinds.insert(str_of(&n[f]));
        }
    }
    let fresh = |req: &str, acc: &str, used: &BTreeSet<String>| {
        (req == acc || !used.contains(req))
            .then_some(())
            .ok_or_else(|| format!("{req:?} is already in use"))
    };
    let mut new_names = accepted.clone();
    if !new_names.is_object() {
        new_names = json!({});
    }
    let mut conflict: Option<(&str, String)> = None;
    for (field, reason, used) in [
        ("plural", "PluralConflict", &resources),
        ("singular", "SingularConflict", &resources),
        ("kind", "KindConflict", &kinds),
        ("listKind", "ListKindConflict", &kinds),
    ] {
        let req = str_of(&requested[field]);
        match fresh(&req, &str_of(&accepted[field]), used) {
            Ok(()) => new_names[field] = json!(req),
            Err(e) => conflict = Some((reason, e)),
        }
        if field == "singular" {
            // Short names are checked between singular and kind, as upstream.
            let short = strings(&requested["shortNames"]);
            if short != strings(&accepted["shortNames"]) {
                let mine = strings(&accepted["shortNames"]);
                let (plural, singular) =
                    (str_of(&accepted["plural"]), str_of(&accepted["singular"]));
                let errs: Vec<String> = short
                    .iter()
                    .filter(|s| !mine.contains(s) && **s != plural && **s != singular)
                    .filter_map(|s| fresh(s, "", &resources).err())
                    .collect();
                if errs.is_empty() {
                    new_names["shortNames"] = requested["shortNames"].clone();
                } else {
                    conflict = Some(("ShortNamesConflict", errs.join(", ")));
                }
            }
        }
    }
    match requested.get("categories") {
        Some(c) => new_names["categories"] = c.clone(),
        None => {
            new_names.as_object_mut().map(|m| m.remove("categories"));
        }
    }
    let (status, reason, message) = match &conflict {
        None => ("True", "NoConflicts", "no conflicts found".to_string()),
        Some((reason, msg)) => ("False", *reason, msg.clone()),
    };
    let unchanged = new_names == *accepted
        && crd["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| {
                c["type"] == "NamesAccepted"
                    && c["status"] == status
                    && c["reason"] == reason
                    && c["message"] == message.as_str()
            });
    if unchanged {
        return None;
    }
    let mut next = crd.clone();
    next["status"]["acceptedNames"] = new_names;
    set_condition(&mut next, "NamesAccepted", status, reason, &message, now);
    if !condition_is(crd, "Established", "True") {
        let (s, r, m) = if conflict.is_none() {
            (
                "False",
                "Installing",
                "the initial names have been accepted",
            )
        } else {
            ("False", "NotAccepted", "not all names are accepted")
        };
        set_condition(&mut next, "Established", s, r, m, now);
    }
    Some(next["status"].take())
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(String::from))
        .collect()
}

/// Semantic equality of two CustomResourceDefinitionNames (absent list = empty list).
fn names_equal(a: &Value, b: &Value) -> bool {
    ["plural", "singular", "kind", "listKind"]
        .iter()
        .all(|f| str_of(&a[f]) == str_of(&b[f]))
        && ["shortNames", "categories"]
            .iter()
            .all(|f| strings(&a[f]) == strings(&b[f]))
}

/// crd_finalizer.go, sync: delete every object of the CRD (through the normal delete, so
/// their own finalizers hold them), then drop the cleanup finalizer; the CRD goes with it.
fn finalize(cluster: &Cluster, crd_rt: &ResourceType, crd: &Value, now: &str) {
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let mut next = crd.clone();
    set_condition(
        &mut next,
        "Terminating",
        "True",
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
        now,
    );
    write_status(cluster, crd_rt, crd, next["status"].take());
    let registry = cluster.registry();
    let mut remaining = 0;
    for rt in registry
        .types()
        .iter()
        .filter(|t| t.origin.as_ref().is_some_and(|o| o.name == name))
    {
        let objects = cluster.store.with(|s| s.list(&rt.key(), None, None));
        for obj in objects {
            let ns = obj["metadata"]["namespace"].as_str().unwrap_or_default();
            let n = obj["metadata"]["name"].as_str().unwrap_or_default();
            // What is left is held by its own finalizers: marked, not gone.
            if let Ok(left) = ops::delete(cluster, rt, ns, n, None, false)
                && has_finalizers(&left)
            {
                remaining += 1;
            }
        }
    }
    let Some(current) = cluster.store.with(|s| s.get(CRD_KEY, "", name)) else {
        return;
    };
    let mut next = (*current).clone();
    if remaining > 0 {
        set_condition(
            &mut next,
            "Terminating",
            "True",
            "InstanceDeletionCheck",
            &format!(
                "could not confirm zero CustomResources remaining: {remaining} remaining, \
                 held by their finalizers"
            ),
            now,
        );
        write_status(cluster, crd_rt, &current, next["status"].take());
        return;
    }
    set_condition(
        &mut next,
        "Terminating",
        "False",
        "InstanceDeletionCompleted",
        "removed all instances",
        now,
    );
    write_status(cluster, crd_rt, &current, next["status"].take());
    let Some(current) = cluster.store.with(|s| s.get(CRD_KEY, "", name)) else {
        return;
    };
    let mut body = (*current).clone();
    if let Some(f) = body["metadata"]["finalizers"].as_array_mut() {
        f.retain(|x| x != CLEANUP_FINALIZER);
    }
    if let Err(e) = ops::update(
        cluster,
        crd_rt,
        "",
        name,
        body,
        Sub::Main,
        &opts(),
        Track::Update,
        None,
    ) {
        tracing::warn!(crd = name, error = %e, "removing the CRD cleanup finalizer failed");
    }
}

fn has_finalizers(obj: &Value) -> bool {
    obj["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, plural: &str, kind: &str, short: &[&str]) -> Value {
        json!({"metadata": {"name": name}, "spec": {"group": "example.com",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind,
                      "listKind": format!("{kind}List"), "shortNames": short}},
            "status": {"acceptedNames": {"plural": "", "kind": ""}}})
    }

    #[test]
    fn naming_accepts_fresh_names_and_reports_conflicts() {
        let mut a = crd("widgets.example.com", "widgets", "Widget", &["wd"]);
        let status = naming(&a, &[Arc::new(a.clone())], "t0").unwrap();
        assert_eq!(status["acceptedNames"]["plural"], "widgets");
        assert_eq!(status["acceptedNames"]["shortNames"], json!(["wd"]));
        let cond = |s: &Value, t: &str| {
            s["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == t)
                .cloned()
        };
        assert_eq!(
            cond(&status, "NamesAccepted").unwrap()["reason"],
            "NoConflicts"
        );
        assert_eq!(
            cond(&status, "Established").unwrap()["reason"],
            "Installing"
        );
        a["status"] = status;
        assert!(
            naming(&a, &[Arc::new(a.clone())], "t1").is_none(),
            "settled"
        );

        // Another CRD of the group wants the same kind and short name.
        let b = crd("gizmos.example.com", "gizmos", "Widget", &["wd"]);
        let all = [Arc::new(a.clone()), Arc::new(b.clone())];
        let status = naming(&b, &all, "t2").unwrap();
        let accepted = cond(&status, "NamesAccepted").unwrap();
        assert_eq!(accepted["status"], "False");
        assert_eq!(accepted["reason"], "ListKindConflict");
        assert_eq!(accepted["message"], "\"WidgetList\" is already in use");
        assert_eq!(status["acceptedNames"]["plural"], "gizmos");
        assert!(status["acceptedNames"].get("shortNames").is_none());
        assert_eq!(
            cond(&status, "Established").unwrap()["reason"],
            "NotAccepted"
        );
    }

    #[test]
    fn conditions_keep_their_transition_time_while_the_status_holds() {
        let mut c = json!({});
        set_condition(&mut c, "Established", "False", "Installing", "m", "t0");
        set_condition(
            &mut c,
            "Established",
            "True",
            "InitialNamesAccepted",
            "m",
            "t1",
        );
        set_condition(
            &mut c,
            "Established",
            "True",
            "InitialNamesAccepted",
            "m2",
            "t2",
        );
        let conds = c["status"]["conditions"].as_array().unwrap();
        assert_eq!(conds.len(), 1);
        assert_eq!(conds[0]["lastTransitionTime"], "t1");
        assert_eq!(conds[0]["message"], "m2");
    }
}
