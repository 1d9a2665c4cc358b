//! Persists the last snapshot in ConfigMaps in the spoke's namespace, so a restarted spoke
//! enforces the gates before (or without) reaching the hub. The head ConfigMap
//! (`--snapshot-configmap`) holds a small snapshot as plain JSON, a larger one gzipped, and
//! past one ConfigMap the account of the shards that hold it (`format` has the layouts).
//! Shards are written first and the head last, into the set of shard names the head does
//! not name, so a write cut short leaves the previous copy whole; shards no head names are
//! deleted after the head is written.

mod format;

use std::{collections::BTreeMap, sync::Arc, time::Instant};

use k8s_openapi::{ByteString, api::core::v1::ConfigMap};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::{Map, Value, json};

pub use format::{GZIP_KEY, SNAPSHOT_KEY};
use format::{Head, Slot};

use crate::{
    error::{Error, Result},
    hub::snapshot::{CompiledSnapshot, Snapshot},
};

const FIELD_MANAGER: &str = "fleetgate-spoke";
/// Marks a shard, so the ones no head names can be found and deleted.
const SHARD_LABEL: &str = "fleetgate.io/snapshot-shard";

/// What one save wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Persisted {
    pub revision: u64,
    /// Bytes of the snapshot's JSON.
    pub json_bytes: usize,
    /// Bytes stored in the cluster (gzipped when larger than one ConfigMap).
    pub stored_bytes: usize,
    /// ConfigMaps that hold it: 1 (the head), or the head and its shards.
    pub config_maps: usize,
    /// How long encoding and writing took.
    pub seconds: f64,
}

/// Whether the snapshot in force is persisted, as the spoke's readiness, metrics, Events and
/// its report to the hub tell it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Persistence {
    /// The last copy written or read back (`None`: nothing persisted since the start).
    pub persisted: Option<Persisted>,
    /// Set while persisting the snapshot in force fails.
    pub failing: Option<Failing>,
}

impl Persistence {
    /// The report's account of it.
    pub fn to_proto(&self) -> fleetgate_proto::v1::SnapshotPersistence {
        let persisted = self.persisted.as_ref();
        let n = |f: fn(&Persisted) -> usize| persisted.map_or(0, |p| f(p) as u64);
        let state = match (&self.failing, persisted) {
            (Some(_), _) => "failing",
            (None, Some(_)) => "persisted",
            (None, None) => "none",
        };
        fleetgate_proto::v1::SnapshotPersistence {
            state: state.into(),
            persisted_revision: persisted.map_or(0, |p| p.revision),
            stored_bytes: n(|p| p.stored_bytes),
            json_bytes: n(|p| p.json_bytes),
            config_maps: u32::try_from(n(|p| p.config_maps)).unwrap_or(u32::MAX),
            error: self
                .failing
                .as_ref()
                .map(|f| f.error.clone())
                .unwrap_or_default(),
            failing_revision: self.failing.as_ref().map_or(0, |f| f.revision),
            failing_since: self
                .failing
                .as_ref()
                .map(|f| fleetgate_proto::time::to_timestamp(f.since)),
        }
    }
}

/// A snapshot that could not be persisted.
#[derive(Debug, Clone, PartialEq)]
pub struct Failing {
    /// The revision in force that is not persisted.
    pub revision: u64,
    pub error: String,
    /// The first failed attempt of this run of failures.
    pub since: chrono::DateTime<chrono::Utc>,
    pub attempts: u64,
}

/// Reads and writes the snapshot ConfigMaps.
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

    /// The head ConfigMap's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace of the ConfigMaps.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn corrupt(&self, reason: impl Into<String>) -> Error {
        Error::PersistedSnapshot {
            configmap: format!("configmap {}/{}", self.namespace, self.name),
            reason: reason.into(),
        }
    }

    /// The persisted snapshot and what it takes in the cluster, `None` when there is no
    /// ConfigMap (or no snapshot in it). `Err(PersistedSnapshot)` when what is stored does not
    /// add up (a shard missing or changed, a hash or length that differs, JSON that does not
    /// parse): the caller treats it as no snapshot. Any other `Err`: the API server could not
    /// be asked.
    pub async fn load(&self) -> Result<Option<(Snapshot, Persisted)>> {
        let started = Instant::now();
        let Some(cm) = self.api.get_opt(&self.name).await? else {
            return Ok(None);
        };
        let binary: Option<BTreeMap<String, Vec<u8>>> = cm
            .binary_data
            .map(|b| b.into_iter().map(|(k, v)| (k, v.0)).collect());
        let head =
            format::read_head(cm.data.as_ref(), binary.as_ref()).map_err(|r| self.corrupt(r))?;
        let (decoded, stored_bytes, json_bytes, config_maps) = match head {
            Head::Empty => return Ok(None),
            Head::Plain(json) => {
                let len = json.len();
                (
                    serde_json::from_str(&json).map_err(|e| e.to_string()),
                    len,
                    len,
                    1,
                )
            }
            Head::Gzip(manifest, gz) => {
                let (len, json) = (gz.len(), manifest.json_length);
                (
                    unblock(move || format::decode(&gz, &manifest)).await,
                    len,
                    json,
                    1,
                )
            }
            Head::Sharded(manifest) => {
                let mut gz = Vec::with_capacity(manifest.length);
                for i in 0..manifest.shards {
                    let name = format::shard_name(&self.name, manifest.slot, i);
                    let Some(shard) = self.api.get_opt(&name).await? else {
                        return Err(self.corrupt(format!("shard {name} missing")));
                    };
                    let part = shard
                        .binary_data
                        .and_then(|mut b| b.remove(format::SHARD_KEY))
                        .ok_or_else(|| self.corrupt(format!("shard {name} has no part")))?;
                    gz.extend_from_slice(&part.0);
                    if gz.len() > manifest.length {
                        return Err(self.corrupt(format!(
                            "shards longer than the {} bytes the head says",
                            manifest.length
                        )));
                    }
                }
                let (len, json, n) = (gz.len(), manifest.json_length, 1 + manifest.shards);
                (
                    unblock(move || format::decode(&gz, &manifest)).await,
                    len,
                    json,
                    n,
                )
            }
        };
        let snapshot: Snapshot = decoded.map_err(|r| self.corrupt(r))?;
        let persisted = Persisted {
            revision: snapshot.revision,
            json_bytes,
            stored_bytes,
            config_maps,
            seconds: started.elapsed().as_secs_f64(),
        };
        Ok(Some((snapshot, persisted)))
    }

    /// Writes `snapshot`: the shards (if any), then the head, then deletes the shards the
    /// head no longer names (a failure there is logged; it leaves only unused ConfigMaps).
    pub async fn save(&self, compiled: Arc<CompiledSnapshot>) -> Result<Persisted> {
        let started = Instant::now();
        let encoded = unblock(move || format::encode(&compiled.snapshot))
            .await
            .map_err(|e| Error::Persist(e.to_string()))?;
        let shards = encoded.shards();
        // The shards go to the set of names the head does not name now.
        let slot = if shards.is_empty() {
            Slot::A
        } else {
            let current = self.api.get_opt(&self.name).await?;
            let named = current.as_ref().and_then(|cm| {
                let binary: Option<BTreeMap<String, Vec<u8>>> = None;
                match format::read_head(cm.data.as_ref(), binary.as_ref()) {
                    Ok(Head::Sharded(m)) => Some(m.slot),
                    _ => None,
                }
            });
            named.map_or(Slot::A, Slot::other)
        };
        for (i, part) in shards.iter().enumerate() {
            let name = format::shard_name(&self.name, slot, i);
            let labels = BTreeMap::from([(SHARD_LABEL.to_owned(), "true".to_owned())]);
            let binary = BTreeMap::from([(format::SHARD_KEY.to_owned(), Some(part.to_vec()))]);
            self.put(&name, labels, BTreeMap::new(), binary).await?;
        }
        let (data, binary) = encoded.head(slot);
        self.put(&self.name, BTreeMap::new(), data, binary).await?;
        let keep: Vec<String> = (0..shards.len())
            .map(|i| format::shard_name(&self.name, slot, i))
            .collect();
        if let Err(e) = self.delete_unnamed_shards(&keep).await {
            tracing::warn!(error = %e, "could not delete shards of an earlier snapshot");
        }
        Ok(Persisted {
            revision: encoded.revision,
            json_bytes: encoded.json_len,
            stored_bytes: encoded.stored_len(),
            config_maps: 1 + shards.len(),
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Deletes this head's shards other than `keep`.
    async fn delete_unnamed_shards(&self, keep: &[String]) -> Result<()> {
        let prefix = format!("{}-", self.name);
        let list = self
            .api
            .list_metadata(&ListParams::default().labels(SHARD_LABEL))
            .await?;
        for cm in list.items {
            let Some(name) = cm.metadata.name else {
                continue;
            };
            let ours = name
                .strip_prefix(&prefix)
                .is_some_and(|rest| rest.len() > 2 && matches!(&rest[..2], "a-" | "b-"));
            if ours && !keep.contains(&name) {
                match self.api.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }

    /// Merge-patches ConfigMap `name` (`None` values remove a key), creating it when it
    /// does not exist.
    async fn put(
        &self,
        name: &str,
        mut labels: BTreeMap<String, String>,
        data: BTreeMap<String, Option<String>>,
        binary: BTreeMap<String, Option<Vec<u8>>>,
    ) -> Result<()> {
        labels.insert(
            "app.kubernetes.io/managed-by".to_owned(),
            FIELD_MANAGER.to_owned(),
        );
        let mut patch = Map::new();
        patch.insert("metadata".into(), json!({ "labels": labels }));
        if !data.is_empty() {
            patch.insert("data".into(), json!(data));
        }
        if !binary.is_empty() {
            let encoded: BTreeMap<&String, Option<ByteString>> = binary
                .iter()
                .map(|(k, v)| (k, v.clone().map(ByteString)))
                .collect();
            patch.insert("binaryData".into(), json!(encoded));
        }
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        match self
            .api
            .patch(name, &params, &Patch::Merge(&Value::Object(patch)))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => {
                let present = |m: BTreeMap<String, Option<String>>| {
                    let m: BTreeMap<_, _> =
                        m.into_iter().filter_map(|(k, v)| Some((k, v?))).collect();
                    (!m.is_empty()).then_some(m)
                };
                let binary: BTreeMap<String, ByteString> = binary
                    .into_iter()
                    .filter_map(|(k, v)| Some((k, ByteString(v?))))
                    .collect();
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(name.to_owned()),
                        namespace: Some(self.namespace.clone()),
                        labels: Some(labels),
                        ..ObjectMeta::default()
                    },
                    data: present(data),
                    binary_data: (!binary.is_empty()).then_some(binary),
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

/// Runs CPU work (JSON and gzip of up to tens of MiB) off the async workers.
async fn unblock<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}
