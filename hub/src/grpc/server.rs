//! The gRPC server of one replica: spoke + admin services, grpc.health.v1,
//! server reflection (v1 and v1alpha), HTTP/2 keepalive, small stream windows, max connection
//! age, optional TLS/mTLS from PEM files, and a graceful drain on shutdown.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fleetgate_proto::v1::admin_service_server::AdminServiceServer;
use fleetgate_proto::v1::spoke_service_server::SpokeServiceServer;
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

use super::admin::AdminApi;
use super::metrics::GrpcMetrics;
use super::reports::ReportBatcher;
use super::spoke::{SpokeApi, StreamConfig};
use crate::db::reports as db;
use crate::fanout::{Fanout, listener};
use crate::fleet_feed::FleetFeed;
use crate::metrics::Metrics;
use crate::service::Service;
use crate::{Error, Result};

/// gRPC flags of `fleetgate-hub serve` (flattened into its config).
#[derive(Debug, Clone, clap::Args)]
pub struct GrpcOptions {
    /// PEM certificate chain for the gRPC listener; with --grpc-tls-key enables TLS.
    #[arg(long, env = "FLEETGATE_GRPC_TLS_CERT", requires = "grpc_tls_key")]
    pub grpc_tls_cert: Option<PathBuf>,
    /// PEM private key for --grpc-tls-cert.
    #[arg(long, env = "FLEETGATE_GRPC_TLS_KEY", requires = "grpc_tls_cert")]
    pub grpc_tls_key: Option<PathBuf>,
    /// PEM CA bundle: require client certificates signed by it (mTLS).
    #[arg(long, env = "FLEETGATE_GRPC_CLIENT_CA", requires = "grpc_tls_cert")]
    pub grpc_client_ca: Option<PathBuf>,
    /// This replica's id in `clusters.connected_replica` (default: hostname).
    #[arg(long, env = "FLEETGATE_REPLICA_ID")]
    pub replica_id: Option<String>,
    /// Interval of keepalive messages on spoke streams (Go-style duration).
    #[arg(long, env = "FLEETGATE_SPOKE_KEEPALIVE", default_value = "15s", value_parser = parse_std_duration)]
    pub spoke_keepalive: Duration,
    /// Spoke streams end cleanly after this age ±10 % so spokes re-balance.
    #[arg(long, env = "FLEETGATE_SPOKE_STREAM_MAX_AGE", default_value = "30m", value_parser = parse_std_duration)]
    pub spoke_stream_max_age: Duration,
    /// How long status reports are gathered before one batched write (ms).
    #[arg(long, env = "FLEETGATE_REPORT_FLUSH_MS", default_value_t = 250)]
    pub report_flush_ms: u64,
}

impl Default for GrpcOptions {
    fn default() -> Self {
        Self {
            grpc_tls_cert: None,
            grpc_tls_key: None,
            grpc_client_ca: None,
            replica_id: None,
            spoke_keepalive: Duration::from_secs(15),
            spoke_stream_max_age: Duration::from_secs(30 * 60),
            report_flush_ms: 250,
        }
    }
}

/// A Go-style duration ("15s", "30m") as a std duration.
pub fn parse_std_duration(s: &str) -> std::result::Result<Duration, String> {
    fleetgate_policy::parse_duration(s)
        .map_err(|e| e.message)?
        .to_std()
        .map_err(|e| e.to_string())
}

impl GrpcOptions {
    /// The replica id: the flag, else the hostname, else a random id.
    pub fn replica(&self) -> String {
        self.replica_id
            .clone()
            .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
            .or_else(|| {
                std::fs::read_to_string("/etc/hostname")
                    .ok()
                    .map(|h| h.trim().to_string())
                    .filter(|h| !h.is_empty())
            })
            .unwrap_or_else(|| format!("hub-{}", uuid::Uuid::new_v4().simple()))
    }

    fn tls(&self) -> Result<Option<ServerTlsConfig>> {
        let (Some(cert), Some(key)) = (&self.grpc_tls_cert, &self.grpc_tls_key) else {
            return Ok(None);
        };
        let read = |flag: &str, p: &PathBuf| {
            std::fs::read(p).map_err(|e| Error::invalid(flag, format!("{}: {e}", p.display())))
        };
        let mut tls = ServerTlsConfig::new().identity(Identity::from_pem(
            read("--grpc-tls-cert", cert)?,
            read("--grpc-tls-key", key)?,
        ));
        if let Some(ca) = &self.grpc_client_ca {
            tls = tls.client_ca_root(Certificate::from_pem(read("--grpc-client-ca", ca)?));
        }
        Ok(Some(tls))
    }
}

/// Serves gRPC on `listener` until `shutdown` is cancelled, then drains:
/// health turns NOT_SERVING, every stream ends with status OK (spokes
/// reconnect to another replica), pending reports are written.
pub async fn serve(
    service: Service,
    listener: TcpListener,
    opts: GrpcOptions,
    shutdown: CancellationToken,
) -> Result<()> {
    let fanout = Fanout::new(Arc::new(service.clone()));
    let fleet = FleetFeed::new(service.clone(), fanout.changes());
    serve_with_fanout(
        service,
        fanout,
        fleet,
        &Metrics::new(),
        listener,
        opts,
        shutdown,
    )
    .await
}

/// [`serve`] with the replica's fan-out and fleet feed given, so the HTTP
/// side (the dashboard's event stream) wakes on the same change notifications
/// and shares the fleet-view reads with `WatchFleet`.
pub async fn serve_with_fanout(
    service: Service,
    fanout: Fanout,
    fleet: FleetFeed,
    metrics: &Metrics,
    listener: TcpListener,
    opts: GrpcOptions,
    shutdown: CancellationToken,
) -> Result<()> {
    let replica = opts.replica();
    {
        let mut conn = service.pool().acquire().await?;
        let cleared = db::clear_replica(&mut conn, &replica).await?;
        if cleared > 0 {
            tracing::info!(%replica, cleared, "cleared connection state of a previous run");
        }
    }
    let grpc_metrics = GrpcMetrics::default();
    metrics.register(|r| grpc_metrics.register(r));
    let tasks = CancellationToken::new();
    let listener_task = tokio::spawn(listener::run(
        fanout.clone(),
        service.pool().clone(),
        replica.clone(),
        grpc_metrics.clone(),
        tasks.clone(),
    ));
    let reports = ReportBatcher::new(
        service.pool().clone(),
        Duration::from_millis(opts.report_flush_ms),
        grpc_metrics.clone(),
    );
    let batcher_task = tokio::spawn(reports.clone().run(tasks.clone()));

    let spoke = SpokeApi::new(
        service.clone(),
        fanout.clone(),
        reports,
        StreamConfig {
            replica: replica.clone(),
            keepalive: opts.spoke_keepalive,
            max_stream_age: opts.spoke_stream_max_age,
            ..StreamConfig::default()
        },
        shutdown.clone(),
        grpc_metrics,
    );
    let admin = AdminApi::new(service.clone(), fleet, shutdown.clone());

    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<SpokeServiceServer<SpokeApi>>().await;
    health.set_serving::<AdminServiceServer<AdminApi>>().await;
    // Both reflection versions: grpcurl/grpcui speak v1, while Python's
    // grpcio-reflection and older grpcurl, Evans and Postman builds speak only
    // v1alpha. Each lists both reflection services, so either client sees the
    // same set of services.
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(fleetgate_proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection()
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(|e| Error::Internal(format!("reflection v1: {e}")))?;
    let reflection_v1alpha = reflection()
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .map_err(|e| Error::Internal(format!("reflection v1alpha: {e}")))?;

    let mut builder = Server::builder()
        // Detect dead peers (spokes behind NAT, half-open TCP) within ~40 s.
        .http2_keepalive_interval(Some(Duration::from_secs(20)))
        .http2_keepalive_timeout(Some(Duration::from_secs(20)))
        .tcp_keepalive(Some(Duration::from_secs(60)))
        .tcp_nodelay(true)
        // Snapshots are small: small windows bound per-stream buffering with
        // thousands of streams.
        .initial_stream_window_size(64 * 1024)
        .initial_connection_window_size(256 * 1024)
        .max_concurrent_streams(128)
        // Backstop behind the jittered stream age: connections are recycled,
        // so an L4 load balancer spreads spokes over new replicas.
        .max_connection_age(opts.spoke_stream_max_age.mul_f64(1.2))
        .max_connection_age_grace(Duration::from_secs(30));
    if let Some(tls) = opts.tls()? {
        builder = builder
            .tls_config(tls)
            .map_err(|e| Error::invalid("--grpc-tls-cert", e.to_string()))?;
    }
    let addr = listener.local_addr().ok();
    tracing::info!(?addr, %replica, "gRPC listening");
    let drain = {
        let shutdown = shutdown.clone();
        let health = health.clone();
        async move {
            shutdown.cancelled().await;
            health
                .set_not_serving::<SpokeServiceServer<SpokeApi>>()
                .await;
            health
                .set_not_serving::<AdminServiceServer<AdminApi>>()
                .await;
            health
                .set_service_status("", tonic_health::ServingStatus::NotServing)
                .await;
        }
    };
    let result = builder
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(SpokeServiceServer::new(spoke))
        .add_service(AdminServiceServer::new(admin))
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), drain)
        .await;
    tasks.cancel();
    let _ = listener_task.await;
    let _ = batcher_task.await;
    // Streams ended by the drain skipped recording their disconnection.
    let cleared = async {
        let mut conn = service.pool().acquire().await?;
        db::clear_replica(&mut conn, &replica).await
    }
    .await;
    if let Err(e) = cleared {
        tracing::warn!(%replica, error = %e, "clearing connection state after the drain failed");
    }
    result.map_err(|e| Error::Internal(format!("gRPC server: {e}")))
}
