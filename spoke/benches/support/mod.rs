//! What the spoke's bench binaries share: the `--bench` gate around their
//! (long) measurement and a kube client for the simulated cluster.

use std::future::Future;

use fleetgate_sim::Sim;
use kube::Client;

/// The simulated cluster every bench runs against.
pub const CLUSTER: &str = "bench";

/// Runs `run(n)` on a multi-threaded runtime when invoked as `cargo bench`,
/// with `n` from the environment variable `size_var` (else `default`).
/// `cargo bench` passes `--bench`; `cargo test --benches` passes nothing
/// useful, so the measurement only runs when asked to bench.
pub fn bench_main<F, Fut>(name: &str, size_var: &str, default: usize, run: F) -> anyhow::Result<()>
where
    F: FnOnce(usize) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    if !std::env::args().any(|a| a == "--bench") {
        println!("{name} bench: run with `cargo bench -p fleetgate-spoke --bench {name}`");
        return Ok(());
    }
    let n = std::env::var(size_var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(n))
}

/// A client for [`CLUSTER`] over the simulator's generated kubeconfig.
pub async fn client_for(sim: &Sim) -> anyhow::Result<Client> {
    let yaml = sim
        .kubeconfig_yaml(CLUSTER)
        .ok_or_else(|| anyhow::anyhow!("no kubeconfig"))?;
    Ok(fleetgate_tests::kube_client(&yaml).await)
}
