//! Pushing a revision to a Flux source's upstream ("a commit to git"), with
//! the manifests it carries and whether it is bad: what `Sim::push*` and
//! `POST /sim/v1/push` share.

use std::collections::BTreeMap;

use anyhow::Context;
use serde_json::Value;

use crate::cluster::{Bundle, Cluster, SourceKey};
use crate::error::Error;
use crate::flux::{controllers, kustomize};

/// A revision pushed as bad: the consumers applying it fail with `message` (see
/// `flux::failure`), on every cluster it is pushed to, or only on those named in `only_on`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Failure {
    pub message: String,
    /// Cluster names; empty means every cluster the revision is pushed to.
    pub only_on: Vec<String>,
    /// Fails only this long after a Kustomization applied it (healthy until then; see
    /// `flux::late`); `None`: fails at once.
    pub after: Option<std::time::Duration>,
    /// With `after`: recovers this long after it began failing (`None`: fails until a newer
    /// revision).
    pub lasting: Option<std::time::Duration>,
}

impl Failure {
    /// Fails everywhere it is pushed, with `message`.
    pub fn new(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            only_on: Vec::new(),
            after: None,
            lasting: None,
        }
    }

    /// Whether the revision is bad on `cluster`.
    pub fn applies_to(&self, cluster: &str) -> bool {
        self.only_on.is_empty() || self.only_on.iter().any(|c| c == cluster)
    }
}

/// Records a pushed revision for a source (also used by `POST /sim/v1/push`), with the
/// manifests it carries (source path → multi-document YAML) when given, and marked bad on
/// this cluster when `failure` applies to it.
pub fn push(
    cluster: &Cluster,
    kind: &str,
    namespace: &str,
    name: &str,
    revision: &str,
    manifests: Option<&BTreeMap<String, String>>,
    failure: Option<&Failure>,
) -> Result<(), Error> {
    if !controllers::is_source(kind) {
        return Err(Error::bad_request(format!(
            "kind {kind:?} is not a Flux source (one of {})",
            controllers::SOURCE_KINDS.join(", ")
        )));
    }
    if revision.is_empty() {
        return Err(Error::bad_request("revision must not be empty"));
    }
    let bundle = manifests.map(parse_bundle).transpose()?;
    let key: SourceKey = (kind.into(), namespace.into(), name.into());
    let here = failure.filter(|f| f.applies_to(&cluster.name));
    let bad = here
        .filter(|f| f.after.is_none())
        .map(|f| f.message.clone());
    let late = here.and_then(|f| {
        Some(crate::flux::late::LateFailure {
            message: f.message.clone(),
            after: f.after?,
            lasting: f.lasting,
        })
    });
    cluster.mark_bad(key.clone(), revision.into(), bad);
    cluster.mark_late(key.clone(), revision.into(), late);
    match bundle {
        Some(bundle) => cluster.push_bundle(key, revision.into(), bundle),
        None => cluster.push(key, revision.into()),
    }
    Ok(())
}

/// The objects per source path of a push's `manifests`, checked.
fn parse_bundle(manifests: &BTreeMap<String, String>) -> Result<Bundle, Error> {
    let mut bundle = Bundle::new();
    for (path, yaml) in manifests {
        let objects = parse_manifests(yaml)
            .map_err(|e| Error::bad_request(format!("manifests[{path:?}]: {e:#}")))?;
        for (i, o) in objects.iter().enumerate() {
            if o["apiVersion"].as_str().is_none_or(str::is_empty)
                || o["kind"].as_str().is_none_or(str::is_empty)
                || o["metadata"]["name"].as_str().is_none_or(str::is_empty)
            {
                return Err(Error::bad_request(format!(
                    "manifests[{path:?}][{i}]: apiVersion, kind and metadata.name are required"
                )));
            }
        }
        bundle.insert(kustomize::normalize_path(path), objects);
    }
    Ok(bundle)
}

/// Objects of a multi-document YAML stream (empty documents skipped).
pub fn parse_manifests(doc: &str) -> anyhow::Result<Vec<Value>> {
    let docs: Vec<Value> = fleetgate_policy::yaml::from_str_documents(doc)
        .map_err(|e| anyhow::anyhow!("{}", e.message))
        .context("parsing YAML manifest")?;
    Ok(docs.into_iter().filter(Value::is_object).collect())
}
