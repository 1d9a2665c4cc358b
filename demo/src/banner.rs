//! What the demo prints once it is ready: where everything is, one command to
//! try per capability, and one line for scripts. Every command under "Try:"
//! works as printed (the test `demo_try` runs each of them against the demo).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use fleetgate_api_types::FleetSummary;

use crate::{calendar, fleet, rollout, team, warn, webhook};

/// Everything the ready message names.
pub(crate) struct Ready<'a> {
    pub hub: &'a str,
    pub grpc: &'a str,
    pub token: &'a str,
    pub kube_dir: &'a Path,
    pub clusters: &'a [fleet::DemoCluster],
    pub summary: &'a FleetSummary,
    /// When the demo began.
    pub started: Instant,
    /// Where the nginx app runs behind nginx-window, and behind the warn gate.
    pub nginx_cluster: Option<&'a str>,
    pub warn_cluster: Option<&'a str>,
    /// The payments team's pending request.
    pub request: &'a str,
    pub team: team::Team,
}

/// `a, b and c`.
fn list(items: &[String]) -> String {
    match items {
        [] => "nothing".to_string(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The "Try:" lines: one command per capability.
fn try_lines(r: &Ready) -> Vec<String> {
    let first = r
        .clusters
        .first()
        .map(|c| c.name.as_str())
        .unwrap_or("prod-eu-1");
    let mut out = vec![
        format!("export FLEETGATE_HUB={} FLEETGATE_TOKEN={}", r.hub, r.token),
        "fleetgate status".to_string(),
        "fleetgate gate preview business-hours".to_string(),
    ];
    if let Some(c) = r.nginx_cluster {
        out.push(format!("fleetgate status {c}"));
    }
    out.push(format!("fleetgate rollout status {}", rollout::GATE));
    out.push(format!(
        "fleetgate override approve {} --reason \"diff reviewed\"",
        r.request
    ));
    out.push(format!(
        "fleetgate status --gate {}",
        calendar::MAINTENANCE_GATE
    ));
    if let Some(c) = r.warn_cluster {
        out.push(format!("fleetgate status {c}"));
    }
    out.push(format!("fleetgate webhook deliveries {}", webhook::NAME));
    out.push(format!("FLEETGATE_TOKEN={} fleetgate status", r.team.token));
    out.push(format!(
        "kubectl --kubeconfig {}/{first}.yaml get gates",
        r.kube_dir.display()
    ));
    out
}

/// Prints the ready message.
pub(crate) fn print_ready(r: &Ready) {
    let s = r.summary;
    let mut text = format!(
        "\nfleetgate demo is running (ready in {:.1} s)\n\
         \n  dashboard    {hub}/\
         \n  admin token  {token}\
         \n  team token   {team}\
         \n               {name} ({role} through access policy {policy}): sees clusters {clusters}, gates {gates}; nothing else\
         \n  REST API     {hub}/api/v1   (OpenAPI: {hub}/api/v1/openapi.json)\
         \n  gRPC         {grpc}\
         \n  fleet        {} clusters, {} may change now, {} closed; {} objects held by a gate\
         \n\nTry:",
        r.started.elapsed().as_secs_f64(),
        s.clusters.total,
        s.clusters.open,
        s.clusters.closed,
        s.objects.held,
        hub = r.hub,
        token = r.token,
        grpc = r.grpc,
        team = r.team.token,
        name = team::TOKEN_NAME,
        role = r.team.role,
        policy = team::POLICY,
        clusters = list(&r.team.clusters),
        gates = list(&r.team.gates),
    );
    for line in try_lines(r) {
        let _ = write!(text, "\n  {line}");
    }
    text.push_str(&format!(
        "\n\n(The approval is {}'s request to open {}; the warn gate is {}.)\
         \nCtrl-C stops everything and removes the temporary files.",
        team::TOKEN_NAME,
        team::APPROVAL_GATE,
        warn::GATE
    ));
    println!("{text}");
    // One line for scripts and the smoke test.
    println!(
        "demo ready: hub={} token={} held={} held_objects={}",
        r.hub, r.token, s.objects.held, s.objects.held_objects
    );
}

#[cfg(test)]
mod tests {
    use super::list;

    #[test]
    fn lists_read_as_prose() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(list(&[]), "nothing");
        assert_eq!(list(&s(&["a"])), "a");
        assert_eq!(list(&s(&["a", "b", "c"])), "a, b and c");
    }
}
