//! Persists the last snapshot in a ConfigMap in the spoke's namespace, so a
//! restarted spoke enforces the gates before (or without) reaching the hub.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
};

use crate::{
    error::{Error, Result},
    hub::snapshot::Snapshot,
};

/// The ConfigMap key holding the snapshot JSON.
pub const SNAPSHOT_KEY: &str = "snapshot.json";
const FIELD_MANAGER: &str = "fleetgate-spoke";

/// Reads and writes the snapshot ConfigMap.
#[derive(Clone)]
pub struct SnapshotStore {
    api: Api<ConfigMap>,
    namespace: String,
    name: String,
}

impl SnapshotStore {
    pub fn new(client: Client, namespace: &str, name: &str) -> Self {
        SnapshotStore {
            api: Api::namespaced(client, namespace),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    fn label(&self) -> String {
        format!("configmap {}/{}", self.namespace, self.name)
    }

    /// The persisted snapshot, `None` when there is no ConfigMap (or no key).
    pub async fn load(&self) -> Result<Option<Snapshot>> {
        let Some(cm) = self.api.get_opt(&self.name).await? else {
            return Ok(None);
        };
        let Some(json) = cm.data.as_ref().and_then(|d| d.get(SNAPSHOT_KEY)) else {
            return Ok(None);
        };
        serde_json::from_str(json)
            .map(Some)
            .map_err(|source| Error::PersistedSnapshot {
                configmap: self.label(),
                source,
            })
    }

    /// Writes the snapshot (creating the ConfigMap when needed).
    pub async fn save(&self, snapshot: &Snapshot) -> Result<()> {
        let json =
            serde_json::to_string_pretty(snapshot).map_err(|source| Error::PersistedSnapshot {
                configmap: self.label(),
                source,
            })?;
        let data = BTreeMap::from([
            (SNAPSHOT_KEY.to_owned(), json),
            ("revision".to_owned(), snapshot.revision.to_string()),
            ("cluster".to_owned(), snapshot.cluster.clone()),
        ]);
        let patch = serde_json::json!({ "data": data });
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        match self
            .api
            .patch(&self.name, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        namespace: Some(self.namespace.clone()),
                        labels: Some(BTreeMap::from([(
                            "app.kubernetes.io/managed-by".to_owned(),
                            FIELD_MANAGER.to_owned(),
                        )])),
                        ..ObjectMeta::default()
                    },
                    data: Some(data),
                    ..ConfigMap::default()
                };
                let pp = PostParams {
                    field_manager: Some(FIELD_MANAGER.into()),
                    ..PostParams::default()
                };
                self.api.create(&pp, &cm).await?;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }
}
