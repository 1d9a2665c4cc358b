//! Reading a hub process's gauges from its `/metrics`: how many spoke streams
//! each replica holds (the replicas phase and the rolling restart).

use crate::Result;
use crate::hub_process::HubProcess;

/// Each replica's `fleetgate_hub_grpc_spokes_connected` gauge, in order.
pub(crate) async fn streams(hubs: &[&HubProcess]) -> Result<Vec<u64>> {
    let mut streams = Vec::new();
    for h in hubs {
        streams.push(spokes_connected(h).await?);
    }
    Ok(streams)
}

/// The replica's `fleetgate_hub_grpc_spokes_connected` gauge.
async fn spokes_connected(hub: &HubProcess) -> Result<u64> {
    let text = reqwest::get(format!("{}/metrics", hub.base_url()))
        .await?
        .error_for_status()?
        .text()
        .await?;
    Ok(gauge(&text, "fleetgate_hub_grpc_spokes_connected").unwrap_or(0))
}

/// A gauge's value in the Prometheus text format.
fn gauge(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?.strip_prefix(' ')?;
        rest.trim().parse::<f64>().ok().map(|v| v as u64)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn gauge_is_read_by_exact_name() {
        let text = "# TYPE fleetgate_hub_spokes_connected gauge\n\
                    fleetgate_hub_spokes_connected_total 9\n\
                    fleetgate_hub_spokes_connected 5000\n";
        assert_eq!(
            super::gauge(text, "fleetgate_hub_spokes_connected"),
            Some(5000)
        );
        assert_eq!(super::gauge(text, "missing"), None);
    }
}
