//! Command-line and environment configuration of `fleetgate-spoke` (clap).
//! Every flag has an environment variable, so the Deployment sets env only.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use clap::{Parser, ValueEnum};

/// What to enforce before any snapshot was ever received (none persisted either).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum WithoutSnapshot {
    /// Change nothing until the first snapshot arrives (safe default).
    #[default]
    None,
    /// Treat every gate as open: resume what fleetgate suspended earlier.
    Open,
    /// Suspend every Kustomization and HelmRelease until the first snapshot.
    Closed,
}

/// Log output format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// fleetgate-spoke: enforces the hub's gates on this cluster's Flux objects.
#[derive(Clone, Debug, Parser)]
#[command(name = "fleetgate-spoke", version, about)]
pub struct Config {
    /// The clock gates are evaluated with (tests inject a manual one).
    #[arg(skip)]
    pub clock: crate::clock::Clock,

    /// This cluster's name, as registered at the hub.
    #[arg(long, env = "FLEETGATE_CLUSTER")]
    pub cluster: String,

    /// The hub's gRPC URL (http:// or https://). Without it the spoke runs
    /// offline from its persisted snapshot.
    #[arg(long, env = "FLEETGATE_HUB_URL")]
    pub hub_url: Option<String>,

    /// Run without a hub: the gates are the Gate objects (gates.fleetgate.io)
    /// in this cluster, delivered by Flux from Git like anything else.
    /// Excludes --hub-url.
    #[arg(long, env = "FLEETGATE_STANDALONE", conflicts_with = "hub_url")]
    pub standalone: bool,

    /// File holding the cluster's credential (takes precedence over FLEETGATE_SPOKE_TOKEN):
    /// its spoke token, or, for a cluster registered with an issuer, a projected
    /// ServiceAccount token or a SPIFFE JWT-SVID. Read again on every connect; a stream on
    /// a JWT ends shortly before the JWT expires and reconnects with the file's new one.
    #[arg(long, env = "FLEETGATE_SPOKE_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,

    /// The cluster's spoke token.
    #[arg(long = "token", env = "FLEETGATE_SPOKE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// PEM file with the CA that signed the hub's certificate (for https:// hub URLs).
    #[arg(long, env = "FLEETGATE_HUB_CA")]
    pub hub_ca: Option<PathBuf>,

    /// Kubeconfig file to use. Without it: `$KUBECONFIG` (several paths allowed)
    /// or `~/.kube/config`, else the in-cluster config (kube-rs inference).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,

    /// The spoke's own namespace (where the snapshot ConfigMap lives).
    #[arg(long, env = "POD_NAMESPACE", default_value = "fleetgate-system")]
    pub namespace: String,

    /// Name of the ConfigMap holding the last snapshot.
    #[arg(
        long,
        env = "FLEETGATE_SNAPSHOT_CONFIGMAP",
        default_value = "fleetgate-spoke-snapshot"
    )]
    pub snapshot_configmap: String,

    /// What to enforce when no snapshot was ever received.
    #[arg(long, env = "FLEETGATE_ENFORCE_WITHOUT_SNAPSHOT", value_enum, default_value_t = WithoutSnapshot::None)]
    pub enforce_without_snapshot: WithoutSnapshot,

    /// Address of the /metrics, /healthz and /readyz listener.
    #[arg(
        long,
        env = "FLEETGATE_SPOKE_HTTP_ADDR",
        default_value = "0.0.0.0:8080"
    )]
    pub http_addr: SocketAddr,

    /// Log format.
    #[arg(long, env = "FLEETGATE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Name of this spoke instance in Kubernetes Events (the pod name).
    #[arg(long, env = "POD_NAME")]
    pub instance: Option<String>,

    /// Also send the spoke's events to Flux's notification-controller at this address (as
    /// Flux controllers' `--events-addr`, e.g.
    /// `http://notification-controller.flux-system.svc.cluster.local./`), so Flux `Alert`s
    /// on Kustomizations and HelmReleases forward them.
    #[arg(long, env = "FLEETGATE_EVENTS_ADDR", value_parser = parse_events_addr)]
    pub events_addr: Option<String>,

    /// Quiet period before a changed status report is sent.
    #[arg(long, env = "FLEETGATE_REPORT_DEBOUNCE", default_value = "1s", value_parser = parse_duration)]
    pub report_debounce: Duration,

    /// Status report heartbeat interval.
    #[arg(long, env = "FLEETGATE_HEARTBEAT_INTERVAL", default_value = "30s", value_parser = parse_duration)]
    pub heartbeat_interval: Duration,

    /// A full re-plan at least this often, even without any event.
    #[arg(long, env = "FLEETGATE_RESYNC_INTERVAL", default_value = "5m", value_parser = parse_duration)]
    pub resync_interval: Duration,

    /// How often missing Flux CRDs are looked for again.
    #[arg(long, env = "FLEETGATE_DISCOVERY_INTERVAL", default_value = "1m", value_parser = parse_duration)]
    pub discovery_interval: Duration,

    /// Reconnect delay after the hub connection fails: uniform in [min/2, min],
    /// doubling with each failure in a row up to --reconnect-max. After the hub
    /// ended the stream on purpose (drain, stream age): [0, min/2] (see
    /// `reconnect`; keep `reconnect::DEFAULT_MIN` equal to this default).
    #[arg(long, env = "FLEETGATE_RECONNECT_MIN", default_value = "500ms", value_parser = parse_duration)]
    pub reconnect_min: Duration,

    /// Longest reconnect delay (keep `reconnect::DEFAULT_MAX` equal to this default).
    #[arg(long, env = "FLEETGATE_RECONNECT_MAX", default_value = "60s", value_parser = parse_duration)]
    pub reconnect_max: Duration,

    /// The hub connection is considered dead after this long without any message.
    #[arg(long, env = "FLEETGATE_HUB_IDLE_TIMEOUT", default_value = "90s", value_parser = parse_duration)]
    pub hub_idle_timeout: Duration,

    /// Patches in flight at once. Each needs its own API server connection,
    /// kept pooled afterwards: 8 suspend 1,000 objects in well under a second
    /// and keep the spoke ~1.5 MiB smaller than 32.
    #[arg(long, env = "FLEETGATE_PATCH_CONCURRENCY", default_value_t = 8)]
    pub patch_concurrency: usize,

    /// `namespace/name` of the Flux Kustomization that delivers this spoke (deploy/flux's
    /// name by default): the spoke warns when a gate would hold it. Empty: no check.
    #[arg(
        long,
        env = "FLEETGATE_OWN_KUSTOMIZATION",
        default_value = "flux-system/fleetgate-spoke"
    )]
    pub own_kustomization: String,

    /// Kinds whose objects `holdObjects` gates may mark inside Kustomizations,
    /// comma-separated `group/version/Kind` (`apps/v1/Deployment,v1/Service`).
    /// Empty: holdObjects gates hold nothing here. The spoke's ClusterRole must
    /// grant list/watch/patch on exactly these (deploy/spoke component
    /// `hold-objects`).
    #[arg(long, env = "FLEETGATE_HELD_KINDS", value_delimiter = ',')]
    pub held_kinds: Vec<crate::hold::kinds::HeldKind>,
}

/// Go-style durations (`500ms`, `30s`, `1m30s`), as everywhere in fleetgate.
fn parse_duration(s: &str) -> Result<Duration, String> {
    if let Some(ms) = s.strip_suffix("ms") {
        return ms
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|e| format!("invalid duration '{s}': {e}"));
    }
    let d = fleetgate_policy::parse_duration(s).map_err(|e| e.message)?;
    d.to_std()
        .map_err(|e| format!("invalid duration '{s}': {e}"))
}

impl Config {
    /// The spoke token: the token file wins over the environment variable.
    pub fn read_token(&self) -> crate::Result<Option<String>> {
        if let Some(path) = &self.token_file {
            let token = std::fs::read_to_string(path).map_err(|e| {
                crate::Error::Config(format!("--token-file {}: {e}", path.display()))
            })?;
            let token = token.trim().to_owned();
            if token.is_empty() {
                return Err(crate::Error::Config(format!(
                    "--token-file {}: empty",
                    path.display()
                )));
            }
            return Ok(Some(token));
        }
        Ok(self
            .token
            .clone()
            .filter(|t| !t.trim().is_empty())
            .map(|t| t.trim().to_owned()))
    }

    /// A configuration for tests and embedding: defaults (and the `FLEETGATE_*`
    /// environment) plus the cluster name.
    pub fn for_cluster(cluster: &str) -> crate::Result<Self> {
        Config::try_parse_from(["fleetgate-spoke", "--cluster", cluster])
            .map_err(|e| crate::Error::Config(e.to_string()))
    }
}

/// An http(s) URL for `--events-addr`.
fn parse_events_addr(s: &str) -> Result<String, String> {
    let url = reqwest::Url::parse(s).map_err(|e| e.to_string())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("not an http(s) URL".into());
    }
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_durations() {
        let c = Config::try_parse_from([
            "fleetgate-spoke",
            "--cluster",
            "c1",
            "--report-debounce",
            "250ms",
            "--heartbeat-interval",
            "1m30s",
            "--enforce-without-snapshot",
            "closed",
        ])
        .unwrap();
        assert_eq!(c.cluster, "c1");
        assert_eq!(c.report_debounce, Duration::from_millis(250));
        assert_eq!(c.heartbeat_interval, Duration::from_secs(90));
        assert_eq!(c.enforce_without_snapshot, WithoutSnapshot::Closed);
        assert_eq!(c.snapshot_configmap, "fleetgate-spoke-snapshot");
        // The benchmark's simulated spokes use these constants.
        assert_eq!(c.reconnect_min, crate::hub::reconnect::DEFAULT_MIN);
        assert_eq!(c.reconnect_max, crate::hub::reconnect::DEFAULT_MAX);
        assert!(
            Config::try_parse_from([
                "fleetgate-spoke",
                "--cluster",
                "c",
                "--resync-interval",
                "soon"
            ])
            .is_err()
        );
    }

    #[test]
    fn token_file_wins_and_is_trimmed() {
        let dir =
            std::env::temp_dir().join(format!("fleetgate-spoke-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "fgs_abc\n").unwrap();
        let mut c = Config::for_cluster("c1").unwrap();
        c.token = Some("from-env".into());
        c.token_file = Some(path.clone());
        assert_eq!(c.read_token().unwrap().as_deref(), Some("fgs_abc"));
        std::fs::write(&path, "  \n").unwrap();
        assert!(c.read_token().is_err());
        c.token_file = None;
        assert_eq!(c.read_token().unwrap().as_deref(), Some("from-env"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
