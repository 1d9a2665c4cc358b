//! The real spoke's footprint: `fleetgate-sim` serves one simulated cluster
//! with N Flux objects, a real `fleetgate-spoke` process governs them against
//! the hub; once its reports reach the hub, its RSS and idle CPU are sampled.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use fleetgate_hub::Service;
use fleetgate_tests::ChildGuard;

use crate::report::SpokeResult;
use crate::{Error, Result, fleet, proc_stats};

/// The simulator names its first cluster this.
const CLUSTER: &str = "cluster-000";
const READY_BOUND: Duration = Duration::from_secs(180);

/// Starts sim + spoke, waits until the hub stored its report, measures.
pub async fn run(
    sim_bin: &Path,
    spoke_bin: &Path,
    objects: usize,
    hub_grpc: SocketAddr,
    service: &Service,
    idle_window: Duration,
    workdir: &Path,
) -> Result<SpokeResult> {
    let cred = service
        .register_cluster(
            &fleet::actor(),
            fleetgate_hub::service::types::RegisterCluster {
                name: CLUSTER.into(),
                labels: [("fleet".to_string(), "bench".to_string())].into(),
                ..Default::default()
            },
            None,
        )
        .await?;
    let kubeconfigs = workdir.join("kubeconfigs");
    let (sim, kubeconfigs) = crate::sim_process::start(sim_bin, 1, objects, &kubeconfigs).await?;
    let kubeconfig = kubeconfigs
        .into_iter()
        .next()
        .ok_or_else(|| Error::setup("fleetgate-sim printed no cluster"))?;

    let http = SocketAddr::from(([127, 0, 0, 1], fleetgate_tests::free_port()));
    let spoke = std::process::Command::new(spoke_bin)
        .args(["--cluster", CLUSTER])
        .arg("--hub-url")
        .arg(format!("http://{hub_grpc}"))
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--http-addr")
        .arg(http.to_string())
        .env("FLEETGATE_SPOKE_TOKEN", &cred.token)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(workdir.join("spoke.log"))?)
        .spawn()
        .map_err(|e| Error::setup(format!("starting fleetgate-spoke: {e}")))?;
    let spoke = ChildGuard(spoke);
    let pid = spoke.0.id();

    // Ready = its report is in the hub's database and stopped growing.
    let deadline = Instant::now() + READY_BOUND;
    let mut last = (0i64, Instant::now());
    let reported = loop {
        if Instant::now() > deadline {
            return Err(Error::Timeout(format!(
                "spoke reported {} objects after {READY_BOUND:?}",
                last.0
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let n = service
            .cluster_status(&fleet::actor(), CLUSTER)
            .await?
            .counts
            .governed;
        if n != last.0 {
            last = (n, Instant::now());
        } else if n > 0 && last.1.elapsed() > Duration::from_secs(3) {
            break n;
        }
    };
    let idle_millicores = proc_stats::cpu_millicores(pid, idle_window).await?;
    let rss_kib = proc_stats::rss_kib(pid)?;
    let rss_anon_kib = proc_stats::status_kib(pid, "RssAnon")?;
    let rss_file_kib = proc_stats::status_kib(pid, "RssFile")?;
    let binary_bytes = std::fs::metadata(spoke_bin)?.len();
    spoke.terminate();
    drop(spoke);
    drop(sim);
    Ok(SpokeResult {
        objects,
        reported_objects: usize::try_from(reported).unwrap_or(0),
        rss_kib,
        rss_anon_kib,
        rss_file_kib,
        binary_bytes,
        idle_millicores,
    })
}
