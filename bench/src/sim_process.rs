//! Starting `fleetgate-sim`: it seeds its clusters, prints one line per cluster
//! naming its kubeconfig, and keeps running; used by the real-spoke phase and
//! the end-to-end phase.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::{Error, Result};

/// How long the simulator may take to seed and print its clusters.
const SIM_BOUND: Duration = Duration::from_secs(180);

/// Starts `fleetgate-sim` with `clusters` clusters of `objects_per_cluster`
/// seeded Flux objects each, kubeconfigs written under `dir`; returns the
/// process (killed on drop) and, per cluster in order, its kubeconfig.
pub async fn start(
    sim_bin: &Path,
    clusters: usize,
    objects_per_cluster: usize,
    dir: &Path,
) -> Result<(tokio::process::Child, Vec<PathBuf>)> {
    let mut child = tokio::process::Command::new(sim_bin)
        .args(["--clusters", &clusters.to_string()])
        .args(["--objects-per-cluster", &objects_per_cluster.to_string()])
        .arg("--kubeconfig-dir")
        .arg(dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| Error::setup(format!("starting fleetgate-sim: {e}")))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| Error::setup("fleetgate-sim stdout"))?;
    let mut lines = BufReader::new(stdout).lines();
    let mut kubeconfigs = Vec::with_capacity(clusters);
    let read = async {
        while kubeconfigs.len() < clusters {
            let line = lines
                .next_line()
                .await?
                .ok_or_else(|| Error::setup("fleetgate-sim exited"))?;
            let path = line
                .split_whitespace()
                .nth(2)
                .ok_or_else(|| Error::setup(format!("unexpected fleetgate-sim line: {line}")))?;
            kubeconfigs.push(PathBuf::from(path));
        }
        Ok::<_, Error>(())
    };
    tokio::time::timeout(SIM_BOUND, read)
        .await
        .map_err(|_| Error::Timeout("fleetgate-sim did not print its clusters".into()))??;
    // Keep draining its stdout so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, kubeconfigs))
}
