//! The kubelet's side of a projected `serviceAccountToken` volume (or a SPIFFE helper's
//! JWT-SVID file): a token for the pod's ServiceAccount, written into a volume directory the
//! way `pkg/volume/util/atomic_writer.go` does (a `..<timestamp>` directory, the `..data`
//! symlink swapped atomically, the file a symlink through it), and written again once 80% of
//! its lifetime has passed (`pkg/kubelet/token/token_manager.go`, `requiresRefresh`; without
//! its random jitter, so tests are deterministic). Unlike TokenRequest, this simulator hook
//! accepts lifetimes under ten minutes, so tests can see a token expire.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::issuer::Subject;

/// What to project and where.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Projection {
    /// The file the workload reads (`<mountPath>/<path>` of the volume).
    pub path: PathBuf,
    /// The ServiceAccount's namespace and name (or `spiffeId`).
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub service_account: Option<String>,
    /// Write a JWT-SVID for this SPIFFE ID instead of a ServiceAccount token.
    #[serde(default)]
    pub spiffe_id: Option<String>,
    /// The volume's `audience`.
    pub audience: String,
    /// The volume's `expirationSeconds` (default 3600).
    #[serde(default)]
    pub expiration_seconds: Option<i64>,
    /// The pod the token is bound to (its `kubernetes.io.pod` claim).
    #[serde(default)]
    pub pod: Option<String>,
}

impl Projection {
    fn subject(&self, cluster: &Cluster) -> Result<Subject> {
        match (&self.namespace, &self.service_account, &self.spiffe_id) {
            (Some(ns), Some(name), None) => {
                let rt = cluster
                    .registry()
                    .by_kind("v1", "ServiceAccount")
                    .ok_or_else(Error::path_not_found)?;
                // The kubelet asks TokenRequest, which needs the ServiceAccount.
                let sa = cluster
                    .store
                    .with(|s| s.get(&rt.key(), ns, name))
                    .ok_or_else(|| Error::not_found(&rt, name))?;
                let uid = sa["metadata"]["uid"].as_str().unwrap_or_default().into();
                Ok(Subject::ServiceAccount {
                    namespace: ns.clone(),
                    name: name.clone(),
                    uid,
                    pod: self
                        .pod
                        .clone()
                        .map(|p| (p, uuid::Uuid::new_v4().to_string())),
                })
            }
            (None, None, Some(id)) if id.starts_with("spiffe://") => {
                Ok(Subject::Spiffe(id.clone()))
            }
            (None, None, Some(id)) => Err(Error::bad_request(format!(
                "projected-token: spiffeId: {id:?} is not a spiffe:// URI"
            ))),
            _ => Err(Error::bad_request(
                "projected-token: give namespace and serviceAccount, or spiffeId",
            )),
        }
    }
}

/// Writes the token now and keeps it fresh until the cluster shuts down or the same path
/// is projected again (which writes a new token at once: a test's "rotation now").
/// Returns the token written.
pub fn project(cluster: &std::sync::Arc<Cluster>, p: Projection) -> Result<String> {
    let subject = p.subject(cluster)?;
    let ttl = p.expiration_seconds.unwrap_or(3600);
    if !(1..=1 << 32).contains(&ttl) {
        return Err(Error::bad_request(format!(
            "projected-token: expirationSeconds: {ttl} is not between 1 and 2^32"
        )));
    }
    if p.audience.is_empty() {
        return Err(Error::bad_request("projected-token: audience: empty"));
    }
    let mint = {
        let cluster = cluster.clone();
        let audience = vec![p.audience.clone()];
        move || {
            let claims =
                cluster
                    .issuer
                    .claims(&subject, &audience, chrono::Utc::now().timestamp(), ttl);
            cluster.issuer.sign(&claims)
        }
    };
    let token = mint();
    write_atomic(&p.path, &token)
        .map_err(|e| Error::bad_request(format!("projected-token: path: {e}")))?;
    let stop = cluster.shutdown.child_token();
    let replaced = cluster
        .projections
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(p.path.clone(), stop.clone());
    if let Some(old) = replaced {
        old.cancel();
    }
    let path = p.path.clone();
    tokio::spawn(refresh(path, ttl, mint, stop));
    Ok(token)
}

async fn refresh(path: PathBuf, ttl: i64, mint: impl Fn() -> String, stop: CancellationToken) {
    let every = Duration::from_millis(u64::try_from(ttl).unwrap_or(1) * 800);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        if let Err(e) = write_atomic(&path, &mint()) {
            tracing::warn!(path = %path.display(), error = %e, "refreshing a projected token failed");
        }
    }
}

/// atomic_writer.go: the payload goes into a fresh `..<timestamp>` directory, `..data` is
/// pointed at it by renaming a new symlink over the old one, and the file the workload
/// opens is a symlink `<name> -> ..data/<name>`; a reader never sees a partial token.
fn write_atomic(path: &Path, token: &str) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let (Some(dir), Some(name)) = (dir, path.file_name()) else {
        return Err(std::io::Error::other("needs a directory and a file name"));
    };
    std::fs::create_dir_all(dir)?;
    let stamp = format!("..{}", chrono::Utc::now().format("%Y_%m_%d_%H_%M_%S.%f"));
    let ts_dir = dir.join(&stamp);
    std::fs::create_dir(&ts_dir)?;
    std::fs::write(ts_dir.join(name), token)?;
    let data = dir.join("..data");
    let old = std::fs::read_link(&data).ok();
    let tmp = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(&stamp, &tmp)?;
    std::fs::rename(&tmp, &data)?;
    if std::fs::symlink_metadata(path).is_err() {
        std::os::unix::fs::symlink(Path::new("..data").join(name), path)?;
    }
    if let Some(old) = old.filter(|o| o.as_os_str() != stamp.as_str()) {
        let _ = std::fs::remove_dir_all(dir.join(old));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_swap_the_data_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        write_atomic(&path, "one").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one");
        write_atomic(&path, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        // Only the current timestamped directory is left.
        let stamped = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| {
                let n = e.file_name().to_string_lossy().to_string();
                n.starts_with("..") && n != "..data"
            })
            .count();
        assert_eq!(stamped, 1);
    }
}
