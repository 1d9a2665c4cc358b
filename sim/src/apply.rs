//! Server-side apply (`application/apply-patch+yaml`): a faithful-enough subset of
//! structured-merge-diff. Each manager owns leaf paths; applying a value another manager
//! owns with a different value is a conflict (409) unless `force=true`; fields a manager
//! applied before and omits now are removed unless someone else owns them. Lists are
//! atomic. Messages follow k8s.io/apimachinery/pkg/util/managedfields/internal/conflict.go.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::crd::ResourceType;
use crate::error::{Error, FieldError, Result};
use crate::fields::{self, FieldSet};
use crate::managed::{self, Entry};
use crate::ops::{self, Outcome, Sub, Track, WriteOpts};
use crate::schema;

/// `fieldManager` is mandatory for apply (apimachinery meta/v1/validation ValidatePatchOptions).
pub fn require_manager(manager: Option<&String>) -> Result<()> {
    if manager.is_some_and(|m| !m.is_empty()) {
        return Ok(());
    }
    Err(Error::invalid(
        "meta.k8s.io",
        "PatchOptions",
        "",
        vec![FieldError {
            detail: "is required for apply requests".into(),
            ..FieldError::required("fieldManager")
        }],
    ))
}

fn render_path(p: &[String]) -> String {
    p.iter().map(|s| format!(".{s}")).collect()
}

fn print_manager(e: &Entry) -> String {
    let mut s = format!("{:?}", e.manager);
    if !e.subresource.is_empty() {
        s = format!("{s} with subresource {:?}", e.subresource);
    }
    if e.operation == "Update" {
        s = format!("{s} using {} at {}", e.api_version, e.time);
    }
    s
}

fn conflict_error(rt: &ResourceType, name: &str, conflicts: &[(Entry, Vec<String>)]) -> Error {
    let n = conflicts.len();
    let body = if n == 1 {
        format!(
            "conflict with {}: {}",
            print_manager(&conflicts[0].0),
            render_path(&conflicts[0].1)
        )
    } else {
        let mut by_manager: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (e, p) in conflicts {
            by_manager
                .entry(print_manager(e))
                .or_default()
                .push(render_path(p));
        }
        let mut lines = Vec::new();
        for (m, paths) in by_manager {
            lines.push(format!("conflicts with {m}:"));
            lines.extend(paths.into_iter().map(|p| format!("- {p}")));
        }
        lines.join("\n")
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(e, p)| json!({"reason": "FieldManagerConflict", "message": format!("conflict with {}", print_manager(e)), "field": render_path(p)}))
        .collect();
    let mut details = json!({"name": name, "kind": rt.plural, "causes": causes});
    if !rt.group.is_empty() {
        details["group"] = json!(rt.group);
    }
    Error::api(
        409,
        "Conflict",
        format!(
            "Apply failed with {n} conflict{}: {body}",
            if n == 1 { "" } else { "s" }
        ),
        Some(details),
    )
}

/// Applies a configuration; returns the outcome and whether the object was created.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    cluster: &Cluster,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
    sub: Sub,
    body: &[u8],
    opts: &WriteOpts,
    force: bool,
) -> Result<(Outcome, bool)> {
    let mut cfg: Value = fleetgate_policy::yaml::from_slice(body)
        .map_err(|e| Error::bad_request(format!("error decoding YAML: {e}")))?;
    if !cfg.is_object() {
        return Err(Error::bad_request("error decoding YAML: not an object"));
    }
    if cfg["apiVersion"].as_str().is_none_or(str::is_empty)
        || cfg["kind"].as_str().is_none_or(str::is_empty)
    {
        return Err(Error::bad_request(
            "apiVersion and kind must be set in an applied configuration",
        ));
    }
    ops::check_type_meta(rt, &cfg)?;
    ops::bind_namespace(rt, &mut cfg, ns)?;
    match cfg["metadata"]["name"].as_str() {
        Some(n) if n == name => {}
        None => cfg["metadata"]["name"] = json!(name),
        Some(n) => {
            return Err(Error::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
    }
    let mut warnings = Vec::new();
    if let Some(schema) = &rt.schema {
        let report = schema::admit_with(schema, &mut cfg, false);
        ops::unknown_fields(rt, &report.unknown, opts.validation, &mut warnings)?;
    }
    let scope = ops::scope_of(rt, sub);
    let applied = fields::leaves(&cfg, scope);
    let subresource = if sub == Sub::Status { "status" } else { "" };
    let mine = |e: &Entry| {
        e.manager == opts.manager && e.operation == "Apply" && e.subresource == subresource
    };
    let my_entry = |set: FieldSet| Entry {
        manager: opts.manager.clone(),
        operation: "Apply".into(),
        subresource: subresource.into(),
        api_version: rt.api_version(),
        time: managed::now(),
        set,
    };
    let key = rt.key();
    let ns_s = ns.unwrap_or_default();
    for _ in 0..5 {
        let Some(old) = cluster.store.with(|s| s.get(&key, ns_s, name)) else {
            if sub == Sub::Status {
                return Err(Error::not_found(rt, name));
            }
            let entries = [my_entry(applied.clone())];
            let mut out = ops::create(
                cluster,
                rt,
                ns,
                cfg.clone(),
                opts,
                Track::Precomputed(&entries),
            )?;
            out.warnings.extend(warnings);
            return Ok((out, true));
        };
        let mut entries = managed::read(&old);
        let mut conflicts: Vec<(Entry, Vec<String>)> = Vec::new();
        for e in entries.iter().filter(|e| !mine(e)) {
            for a in &applied {
                let owned = e.set.iter().any(|p| fields::overlaps(a, p));
                if owned && fields::get(&old, a) != fields::get(&cfg, a) {
                    conflicts.push((e.clone(), a.clone()));
                }
            }
        }
        if !conflicts.is_empty() && !force {
            return Err(conflict_error(rt, name, &conflicts));
        }
        for e in entries.iter_mut().filter(|e| !mine(e)) {
            e.set
                .retain(|p| !conflicts.iter().any(|(_, a)| fields::overlaps(a, p)));
        }
        let previous: FieldSet = entries
            .iter()
            .filter(|e| mine(e))
            .flat_map(|e| e.set.clone())
            .collect();
        let mut new = (*old).clone();
        for p in previous.difference(&applied) {
            let others_own = entries
                .iter()
                .filter(|e| !mine(e))
                .any(|e| e.set.iter().any(|q| fields::overlaps(p, q)));
            if !others_own && !applied.iter().any(|a| fields::overlaps(a, p)) {
                fields::remove(&mut new, p);
            }
        }
        for a in &applied {
            if let Some(v) = fields::get(&cfg, a) {
                fields::set(&mut new, a, v.clone());
            }
        }
        match entries.iter_mut().find(|e| mine(e)) {
            Some(e) if e.set != applied => {
                e.set = applied.clone();
                e.time = managed::now();
            }
            Some(_) => {}
            None => entries.push(my_entry(applied.clone())),
        }
        entries.retain(|e| !e.set.is_empty());
        match ops::update(
            cluster,
            rt,
            ns_s,
            name,
            new,
            sub,
            opts,
            Track::Precomputed(&entries),
            Some(&old),
        ) {
            Err(Error::Api(s))
                if s.reason == "Conflict"
                    && s.details
                        .as_ref()
                        .is_some_and(|d| d.get("causes").is_none()) =>
            {
                continue;
            }
            other => {
                return other.map(|mut o| {
                    o.warnings.extend(warnings);
                    (o, false)
                });
            }
        }
    }
    Err(Error::conflict(rt, name))
}
