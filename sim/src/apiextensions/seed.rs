//! The CRDs every simulated cluster starts with: the upstream Flux CRDs (`sim/crds/`) and
//! fleetgate's Gate CRD (`deploy/spoke`), as a real cluster holds them once installed and
//! established. Built once per process and shared by every cluster (the same `Arc`s in
//! each store and one registry), so hundreds of clusters cost no more memory than one.

use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::crd::{FLEETGATE_CRDS, FLUX_CRDS, Registry};
use crate::error::{Error, FieldError};

use super::crd_object::{CRD_KEY, set_condition};
use super::strategy;

/// The seeded CRD objects and the registry serving them with the built-in kinds.
#[derive(Debug)]
pub struct Templates {
    pub crds: Vec<Arc<Value>>,
    pub registry: Arc<Registry>,
}

/// The templates, built on first use. Their resourceVersions are 2, 3, … : the first
/// writes of a fresh store (see [`install`]).
pub fn templates() -> Result<&'static Templates, Error> {
    static TEMPLATES: OnceLock<Result<Templates, String>> = OnceLock::new();
    TEMPLATES
        .get_or_init(build)
        .as_ref()
        .map_err(|e| Error::Config(e.clone()))
}

fn build() -> Result<Templates, String> {
    let now = crate::managed::now();
    let mut crds = Vec::new();
    for (i, doc) in FLUX_CRDS.iter().chain(FLEETGATE_CRDS).enumerate() {
        let mut crd: Value = fleetgate_policy::yaml::from_str(doc)
            .map_err(|e| format!("seeded CRD: {}", e.message))?;
        strategy::set_defaults(&mut crd["spec"]);
        let meta = &mut crd["metadata"];
        meta["uid"] = json!(uuid::Uuid::new_v4().to_string());
        meta["creationTimestamp"] = json!(now);
        meta["generation"] = json!(1);
        meta["resourceVersion"] = json!((i + 2).to_string());
        // As the naming and establishing controllers leave an installed CRD.
        crd["status"] = json!({"acceptedNames": crd["spec"]["names"].clone()});
        set_condition(
            &mut crd,
            "NamesAccepted",
            "True",
            "NoConflicts",
            "no conflicts found",
            &now,
        );
        set_condition(
            &mut crd,
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
            &now,
        );
        let storage = crd["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v["storage"] == Value::Bool(true))
            .map(|v| v["name"].clone())
            .collect::<Vec<_>>();
        crd["status"]["storedVersions"] = json!(storage);
        let errors = strategy::validate(&crd, None);
        if !errors.is_empty() {
            let name = crd["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let rendered: Vec<String> = errors.iter().map(FieldError::render).collect();
            return Err(format!(
                "seeded CRD {name} is invalid: {}",
                rendered.join(", ")
            ));
        }
        crds.push(Arc::new(crd));
    }
    let registry = Arc::new(Registry::build(&crds, None));
    Ok(Templates { crds, registry })
}

/// Puts the seeded CRDs into a fresh cluster's store (as its first writes) and serves them.
pub fn install(cluster: &Cluster) -> Result<(), Error> {
    let t = templates()?;
    cluster.store.with(|s| {
        for crd in &t.crds {
            s.seed(CRD_KEY, crd.clone());
        }
    });
    *cluster.registry.write().unwrap_or_else(|p| p.into_inner()) = t.registry.clone();
    Ok(())
}

impl Registry {
    /// The built-in kinds plus the seeded CRDs (the Flux kinds and Gate).
    pub fn standard() -> Result<Registry, Error> {
        Ok((*templates()?.registry).clone())
    }
}
