//! With a hub: the hub's gates for this cluster as Gate objects (labelled
//! `fleetgate.io/origin: hub`), so `kubectl get gates` shows them and open/close
//! requests have an object to annotate. The hub is the source of the spec: a
//! person's edit is reverted with a Warning Event; annotations (requests) and
//! labels people add are kept. A Gate object of the same name made in the
//! cluster is never touched.

use std::{collections::HashMap, sync::Arc};

use kube::{
    Api, ResourceExt,
    api::{DeleteParams, DynamicObject, PostParams},
};
use serde_json::{Value, json};

use super::object::{HUB_VERSION_ANNOTATION, ORIGIN_LABEL, is_from_hub, reference, resource};
use crate::{context::Context, hub::snapshot::CompiledSnapshot};

/// What the spoke last wrote per mirrored gate: (resourceVersion, spec). If the
/// stored object still has that version but another spec, the API server
/// changed what we wrote (schema pruning): writing again would loop.
pub type Written = HashMap<String, (String, Value)>;

/// Creates, reverts and deletes mirrored Gate objects to match `snapshot`.
pub async fn sync(
    ctx: &Context,
    api: &Api<DynamicObject>,
    objects: &[Arc<DynamicObject>],
    snapshot: Option<&CompiledSnapshot>,
    written: &mut Written,
) {
    // Revision 0 is an invented no-snapshot policy, not the hub's gates.
    let Some(snapshot) = snapshot.filter(|s| s.revision() > 0) else {
        return;
    };
    let by_name: HashMap<String, &Arc<DynamicObject>> =
        objects.iter().map(|o| (o.name_any(), o)).collect();
    for rule in &snapshot.snapshot.gates {
        let spec = rule.manifest.get("spec").cloned().unwrap_or(Value::Null);
        let version = rule.version.to_string();
        let result = match by_name.get(&rule.name) {
            None => create(api, &rule.name, &spec, &version).await,
            Some(obj) if !is_from_hub(obj) => {
                tracing::debug!(gate = %rule.name, "a Gate object made in the cluster has the hub gate's name; left alone");
                continue;
            }
            Some(obj) if obj.data["spec"] == spec => continue,
            Some(obj) => {
                if written.get(&rule.name).is_some_and(|(rv, s)| {
                    obj.resource_version().as_deref() == Some(rv) && *s == spec
                }) {
                    continue;
                }
                let by_person = obj.annotations().get(HUB_VERSION_ANNOTATION) == Some(&version);
                let r = revert(api, obj, &spec, &version).await;
                if r.is_ok() && by_person {
                    let note = format!(
                        "spec reverted to the hub's gate (version {version}); change it at the hub, or request open/close with the {} / {} annotations",
                        super::requests::OPEN_REQUESTED_AT,
                        super::requests::CLOSE_REQUESTED_AT
                    );
                    if let Err(e) = ctx
                        .recorder
                        .publish_typed(true, "SpecReverted", "Mirror", note, &reference(obj))
                        .await
                    {
                        tracing::warn!(error = %e, "could not publish the revert event");
                    }
                }
                r
            }
        };
        match result {
            Ok(obj) => {
                if let Some(rv) = obj.resource_version() {
                    written.insert(rule.name.clone(), (rv, spec));
                }
            }
            Err(e) => {
                let e = crate::Error::from(e);
                ctx.metrics.error(&e);
                tracing::warn!(gate = %rule.name, error = %e, "could not mirror the hub's gate; retrying on the next pass");
            }
        }
    }
    for obj in objects {
        let name = obj.name_any();
        if is_from_hub(obj) && snapshot.gate(&name).is_none() {
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {
                    written.remove(&name);
                }
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    tracing::warn!(gate = %name, error = %e, "could not delete a mirrored gate the hub no longer sends")
                }
            }
        }
    }
}

async fn create(
    api: &Api<DynamicObject>,
    name: &str,
    spec: &Value,
    version: &str,
) -> kube::Result<DynamicObject> {
    let mut obj = DynamicObject::new(name, &resource());
    obj.metadata.labels = Some([(ORIGIN_LABEL.to_owned(), "hub".to_owned())].into());
    obj.metadata.annotations =
        Some([(HUB_VERSION_ANNOTATION.to_owned(), version.to_owned())].into());
    obj.data = json!({ "spec": spec });
    api.create(&PostParams::default(), &obj).await
}

/// Replaces the spec (bound to the observed resourceVersion: a concurrent edit
/// is a 409, retried on the next pass) and records the hub's version.
async fn revert(
    api: &Api<DynamicObject>,
    obj: &DynamicObject,
    spec: &Value,
    version: &str,
) -> kube::Result<DynamicObject> {
    let mut obj = obj.clone();
    obj.metadata.managed_fields = None;
    obj.annotations_mut()
        .insert(HUB_VERSION_ANNOTATION.to_owned(), version.to_owned());
    obj.data["spec"] = spec.clone();
    api.replace(&obj.name_any(), &PostParams::default(), &obj)
        .await
}
