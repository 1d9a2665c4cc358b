//! Write semantics shared by every verb: create, update (main resource or `/status`),
//! delete (finalizers, namespace deletion), generateName, dry run and the no-op write.
//! The object to store is built in `prepare` (server-set metadata, status rules,
//! schema admission, managedFields bookkeeping).

use std::sync::Arc;

use rand::RngExt;
use serde_json::{Value, json};

use crate::apiextensions::strategy;
use crate::cluster::Cluster;
use crate::crd::{ResourceType, is_crd};
use crate::error::{Error, FieldError, Result};
use crate::meta::validate_name;
pub use crate::prepare::{bind_namespace, check_type_meta, prepare, unknown_fields};
use crate::prepare::{same_content, timestamp};
pub use crate::write_opts::{FieldValidation, Sub, Track, WriteOpts, scope_of};

pub struct Outcome {
    pub object: Arc<Value>,
    pub warnings: Vec<String>,
}

fn namespace_type(cluster: &Cluster) -> Result<Arc<ResourceType>> {
    cluster
        .registry()
        .lookup("", "v1", "namespaces")
        .ok_or_else(|| Error::Config("namespaces type missing".into()))
}

fn generated_name(prefix: &str) -> String {
    // names.SimpleNameGenerator: 5 chars from an alphabet without vowels/ambiguous digits.
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    let suffix: String = (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{prefix}{suffix}")
}

pub fn create(
    cluster: &Cluster,
    rt: &ResourceType,
    ns: Option<&str>,
    mut body: Value,
    opts: &WriteOpts,
    track: Track<'_>,
) -> Result<Outcome> {
    check_type_meta(rt, &body)?;
    bind_namespace(rt, &mut body, ns)?;
    if body["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .is_empty()
        && let Some(prefix) = body["metadata"]["generateName"].as_str()
    {
        body["metadata"]["name"] = json!(generated_name(prefix));
    }
    let name = body["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    validate_name(rt, &name)?;
    let ns = body["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (new, warnings) = prepare(rt, None, body, Sub::Main, opts, track)?;
    let key = rt.key();
    let nst = namespace_type(cluster)?;
    let out = cluster.store.with(|s| {
        if rt.namespaced && s.get(&nst.key(), "", &ns).is_none() {
            return Err(Error::not_found(&nst, &ns));
        }
        if s.get(&key, &ns, &name).is_some() {
            return Err(Error::already_exists(rt, &name));
        }
        let object = if opts.dry_run {
            Arc::new(new)
        } else {
            s.put(&key, new, rt.is_flux())
        };
        Ok(Outcome { object, warnings })
    })?;
    if is_crd(rt) && !opts.dry_run {
        (cluster.after_crd_write)(cluster);
    }
    Ok(out)
}

/// Replaces an object (PUT, or the result of a patch). `expected_rv` is the optimistic
/// concurrency precondition; custom resources require one (AllowUnconditionalUpdate=false).
#[allow(clippy::too_many_arguments)]
pub fn update(
    cluster: &Cluster,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    body: Value,
    sub: Sub,
    opts: &WriteOpts,
    track: Track<'_>,
    old_seen: Option<&Value>,
) -> Result<Outcome> {
    check_type_meta(rt, &body)?;
    let body_name = body["metadata"]["name"].as_str().unwrap_or_default();
    if body_name != name {
        return Err(Error::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let expected_rv = body["metadata"]["resourceVersion"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(String::from);
    if expected_rv.is_none() && rt.custom && old_seen.is_none() {
        return Err(Error::invalid(
            &rt.group,
            &rt.kind,
            name,
            vec![FieldError::invalid(
                "metadata.resourceVersion",
                "0x0".into(),
                "must be specified for an update".into(),
            )],
        ));
    }
    let key = rt.key();
    let mut removed_held = false;
    let out = cluster.store.with(|s| {
        let old = s
            .get(&key, ns, name)
            .ok_or_else(|| Error::not_found(rt, name))?;
        let cur_rv = old["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default();
        if expected_rv.as_deref().is_some_and(|rv| rv != cur_rv) {
            return Err(Error::conflict(rt, name));
        }
        // A patch computed on `old_seen` must still apply to the stored object.
        if old_seen.is_some_and(|seen| seen["metadata"]["resourceVersion"] != cur_rv) {
            return Err(Error::conflict(rt, name));
        }
        let mut body = body;
        bind_namespace(rt, &mut body, rt.namespaced.then_some(ns))?;
        let (new, warnings) = prepare(rt, Some(&old), body, sub, opts, track)?;
        if same_content(&new, &old) {
            return Ok(Outcome {
                object: old,
                warnings,
            });
        }
        let finalized = new["metadata"].get("deletionTimestamp").is_some()
            && new["metadata"]["finalizers"]
                .as_array()
                .is_none_or(|f| f.is_empty());
        let object = if opts.dry_run {
            Arc::new(new)
        } else if finalized {
            removed_held = true;
            s.put(&key, new, rt.is_flux());
            s.remove(&key, ns, name, rt.is_flux())
                .ok_or_else(|| Error::not_found(rt, name))?
        } else {
            s.put(&key, new, rt.is_flux())
        };
        Ok(Outcome { object, warnings })
    })?;
    // A CRD write, or the last finalizer of an object a terminating CRD waits for.
    if !opts.dry_run
        && (is_crd(rt) || (removed_held && rt.origin.as_ref().is_some_and(|o| o.terminating)))
    {
        (cluster.after_crd_write)(cluster);
    }
    Ok(out)
}

/// Deletes an object; objects with finalizers only get a deletionTimestamp.
/// Deleting a namespace removes everything in it at once (no Terminating phase).
pub fn delete(
    cluster: &Cluster,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    precondition_rv: Option<&str>,
    dry_run: bool,
) -> Result<Arc<Value>> {
    let key = rt.key();
    let namespaced_types: Vec<Arc<ResourceType>> = if rt.key() == "/v1/namespaces" {
        cluster
            .registry()
            .types()
            .iter()
            .filter(|t| t.namespaced)
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    let crd = is_crd(rt);
    let out = cluster.store.with(|s| {
        let old = s
            .get(&key, ns, name)
            .ok_or_else(|| Error::not_found(rt, name))?;
        if precondition_rv.is_some_and(|rv| old["metadata"]["resourceVersion"] != rv) {
            return Err(Error::conflict(rt, name));
        }
        if dry_run {
            return Ok(old);
        }
        if crd && old["metadata"].get("deletionTimestamp").is_none() {
            let marked = strategy::mark_deleting(&old, &timestamp());
            return Ok(s.put(&key, marked, false));
        }
        let has_finalizers = old["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
        if has_finalizers {
            if old["metadata"].get("deletionTimestamp").is_some() {
                return Ok(old);
            }
            let mut marked = (*old).clone();
            marked["metadata"]["deletionTimestamp"] = json!(timestamp());
            marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            return Ok(s.put(&key, marked, rt.is_flux()));
        }
        for t in &namespaced_types {
            for obj in s.list(&t.key(), Some(name), None) {
                let n = obj["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                s.remove(&t.key(), name, &n, t.is_flux());
            }
        }
        s.remove(&key, ns, name, rt.is_flux())
            .ok_or_else(|| Error::not_found(rt, name))
    })?;
    if crd && !dry_run {
        (cluster.after_crd_write)(cluster);
        // The finalizer ran: the CRD is gone unless other finalizers hold it.
        let left = cluster.store.with(|s| s.get(&key, ns, name));
        return Ok(left.unwrap_or(out));
    }
    Ok(out)
}
