//! What the demo prints once it is ready: where everything is, what to try,
//! and one line for scripts.

use std::path::Path;
use std::time::Instant;

use fleetgate_api_types::FleetSummary;

use crate::{fleet, rollout};

/// The ready message for `summary`, `started` being when the demo began.
pub(crate) fn print_ready(
    hub: &str,
    grpc: &str,
    token: &str,
    kube_dir: &Path,
    clusters: &[fleet::DemoCluster],
    summary: &FleetSummary,
    started: Instant,
) {
    let first = clusters
        .first()
        .map(|c| c.name.as_str())
        .unwrap_or("prod-eu-1");
    println!(
        "\nfleetgate demo is running (ready in {:.1} s)\n\
         \n  dashboard    {hub}/\
         \n  admin token  {token}\
         \n  REST API     {hub}/api/v1   (OpenAPI: {hub}/api/v1/openapi.json)\
         \n  gRPC         {grpc}\
         \n  fleet        {} clusters, {} may change now, {} closed; {} objects held by a gate\
         \n\nTry:\
         \n  export FLEETGATE_HUB={hub} FLEETGATE_TOKEN={token}\
         \n  fleetgate status\
         \n  fleetgate gate preview business-hours\
         \n  fleetgate rollout status {}\
         \n  fleetgate gate open sre-approval --for 1h --reason \"demo\" --cluster {first}\
         \n  kubectl --kubeconfig {}/{first}.yaml get kustomizations -A\
         \n\nCtrl-C stops everything and removes the temporary files.",
        started.elapsed().as_secs_f64(),
        summary.clusters.total,
        summary.clusters.open,
        summary.clusters.closed,
        summary.objects.held,
        rollout::GATE,
        kube_dir.display(),
    );
    // One line for scripts and the smoke test.
    println!(
        "demo ready: hub={hub} token={token} held={} held_objects={}",
        summary.objects.held, summary.objects.held_objects
    );
}
