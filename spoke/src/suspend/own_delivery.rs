//! The Kustomization that delivers the spoke itself (`--own-kustomization`, by default
//! `flux-system/fleetgate-spoke` as `deploy/flux` names it). A gate holding it would also hold
//! spoke upgrades and fixes; `deploy/flux` annotates it `fleetgate.io/ignore: "true"`, and when
//! a gate would still hold it (annotation removed, or a `freezeSources` gate freezing a source
//! it shares) the spoke says so once per set of gates: a log warning and an Event on it.

use fleetgate_policy::FluxKind;
use k8s_openapi::api::core::v1::ObjectReference;

use crate::cluster::observed::{ObjectKey, ObservedObject};
use crate::context::Context;
use crate::error::Error;
use crate::suspend::plan::Planner;

/// Remembers what was last warned about.
#[derive(Debug, Default)]
pub struct OwnDelivery {
    key: Option<ObjectKey>,
    warned: Vec<String>,
}

impl OwnDelivery {
    /// `namespace/name` of the Kustomization; empty turns the check off.
    pub fn new(own: &str) -> Self {
        let key = own
            .split_once('/')
            .filter(|(ns, name)| !ns.is_empty() && !name.is_empty())
            .map(|(ns, name)| ObjectKey::new(FluxKind::Kustomization, ns, name));
        OwnDelivery {
            key,
            warned: Vec::new(),
        }
    }

    /// The spoke's Kustomization and the gates holding it, the first time this set of gates
    /// would hold it; `None` when nothing new is to be said. A set that goes away and comes
    /// back is said again.
    pub fn check(
        &mut self,
        planner: &Planner<'_>,
        objects: &[ObservedObject],
    ) -> Option<(ObjectKey, Vec<String>)> {
        let key = self.key.as_ref()?;
        let gates = objects
            .iter()
            .find(|o| o.key == *key)
            .map(|o| planner.gates_holding(o))
            .unwrap_or_default();
        if gates == self.warned {
            return None;
        }
        self.warned = gates.clone();
        (!gates.is_empty()).then(|| (key.clone(), gates))
    }
}

/// Says that `gates` would hold the spoke's own Kustomization: a log warning and an Event
/// (reason `SpokeDeliveryGated`) on the Kustomization.
pub async fn warn(ctx: &Context, key: &ObjectKey, gates: &[String]) {
    let note = format!(
        "gate(s) {} would hold this Kustomization, which delivers the fleetgate spoke: while \
         closed, spoke upgrades and fixes wait too. Annotate it fleetgate.io/ignore: \"true\" \
         (deploy/flux does) or keep it out of the gates' targets.",
        gates.join(", ")
    );
    tracing::warn!(object = %key, gates = %gates.join(","), "{note}");
    let reference = ObjectReference {
        api_version: Some(format!("{}/{}", key.kind.group(), key.kind.version())),
        kind: Some(key.kind.as_str().to_owned()),
        namespace: Some(key.namespace.clone()),
        name: Some(key.name.clone()),
        ..ObjectReference::default()
    };
    if let Err(e) = ctx
        .recorder
        .publish("SpokeDeliveryGated", "Warn", note, &reference)
        .await
    {
        let e = Error::from(e);
        ctx.metrics.error(&e);
        tracing::warn!(error = %e, "could not publish event");
    }
}
