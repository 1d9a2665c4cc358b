//! `fleetgate-hub serve`: connect and migrate the database, ensure the
//! bootstrap admin token, build the [`Replica`], then serve HTTP and gRPC
//! until the shutdown token fires (SIGTERM/SIGINT in `main`), draining
//! in-flight requests and streams.

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpSocket};
use tokio_util::sync::CancellationToken;

use crate::ServiceDefaults;
use crate::config::ServeConfig;
use crate::http::app;
use crate::replica::Replica;
use crate::rest::AppState;
use crate::service::Service;
use crate::{Error, Result, db, drain, startup};

/// Runs the hub until `shutdown` is cancelled.
pub async fn serve(config: ServeConfig, shutdown: CancellationToken) -> Result<()> {
    serve_drained(config, shutdown).await.map(drop)
}

/// What a drained hub still holds (its replica: connection state, caches, verifiers).
/// Dropping it frees them one by one; a process about to exit can
/// [`Drained::leak`] it instead (with 10,000 spokes and their issuers' verifiers the
/// drop took a few hundred milliseconds while a single replica's fleet waited).
#[must_use]
pub struct Drained(Replica);

impl Drained {
    /// The drained replica (its metrics, its service).
    pub fn replica(&self) -> &Replica {
        &self.0
    }

    /// Forgets what the hub held, for a process that exits next.
    pub fn leak(self) {
        std::mem::forget(self);
    }
}

/// [`serve`], answering what the drained hub held instead of dropping it.
pub async fn serve_drained(config: ServeConfig, shutdown: CancellationToken) -> Result<Drained> {
    startup::begin();
    let pool = db::connect(&config.database_url, config.db_max_connections).await?;
    startup::phase("db_connected");
    db::migrate(&pool).await?;
    startup::phase("migrated");
    let mut service = match &config.clock {
        Some(clock) => Service::with_clock(pool, clock.clone()),
        None => Service::new(pool),
    };
    if let Some(path) = &config.identity_config {
        let settings = crate::identity::config::IdentityConfig::load(path)?;
        let egress = config
            .egress
            .policy()
            .map_err(|e| crate::Error::invalid("--egress-ca-bundle", e.to_string()))?;
        let identities = crate::identity::identities(settings, egress, Default::default())?;
        service = service.with_identities(std::sync::Arc::new(identities));
    }
    let admission = config
        .egress
        .policy()
        .map_err(|e| crate::Error::invalid("--egress-ca-bundle", e.to_string()))?
        .allow_private(config.admission_allow_private || config.egress.egress_allow_private);
    service = service.with_admission_egress(admission);
    let spoke_issuers = crate::identity::spoke_jwt::SpokeIssuers::new(
        config
            .egress
            .policy()
            .map_err(|e| crate::Error::invalid("--egress-ca-bundle", e.to_string()))?,
        config.grpc.spoke_audience.clone(),
        service.identities().config.clock_skew,
        service
            .identities()
            .config
            .jwks_min_refetch
            .unwrap_or(crate::identity::DEFAULT_MIN_REFETCH),
        service.identities().metrics.clone(),
    )
    .map_err(|e| crate::Error::invalid("--egress-ca-bundle", e.to_string()))?;
    service = service.with_spoke_issuers(std::sync::Arc::new(spoke_issuers));
    if let Some(secret) = &config.admin_token {
        service.ensure_admin_token(secret).await?;
        startup::phase("admin_token");
    }
    let replica = Replica::new(service, config.http, config.grpc)
        .with_notify(&config.notify, &config.egress)?
        .with_calendars(&config.calendar, &config.egress)?;
    let http = bind(config.http_addr, config.listen_backlog)?;
    let grpc = bind(config.grpc_addr, config.listen_backlog)?;
    startup::phase("bound");
    if purge_enabled() {
        let bursts = prometheus_client::metrics::counter::Counter::default();
        replica.metrics.register(|r| {
            r.register(
                "allocator_connect_bursts",
                "Bursts of spoke connections during which the allocator returned freed pages at once",
                bursts.clone(),
            )
        });
        tokio::spawn(crate::allocator::eager_during_bursts(
            replica.grpc_metrics.spokes_connected.clone(),
            bursts,
            shutdown.clone(),
        ));
    }
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            shutdown.cancelled().await;
            drain::begin();
        }
    });
    let result = replica
        .run(serve_both(&replica, http, grpc, shutdown))
        .await;
    drain::phase("done");
    result.map(|()| Drained(replica))
}

static PURGE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes [`serve`] return the allocator's freed pages at once during each burst
/// of spoke connections ([`crate::allocator`]): for the `fleetgate-hub` binary, whose
/// global allocator is jemalloc.
pub fn enable_allocator_purge() {
    PURGE.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn purge_enabled() -> bool {
    PURGE.load(std::sync::atomic::Ordering::Relaxed)
}

/// Binds a listener on `addr` with a listen backlog of `backlog` (and
/// `SO_REUSEADDR`, as `TcpListener::bind` sets it, so a restarted hub
/// rebinds at once). A restarted hub meets its whole fleet reconnecting at
/// once; with tokio's default backlog of 1024 the kernel dropped the SYNs
/// beyond it and those spokes retried only after TCP's 1 s retransmission
/// timeout (then 3 s, 7 s …), so `--listen-backlog` defaults to what the
/// kernel allows (`net.core.somaxconn`).
pub fn bind(addr: SocketAddr, backlog: u32) -> Result<TcpListener> {
    let listen = || -> std::io::Result<TcpListener> {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(backlog)
    };
    listen().map_err(|e| Error::Internal(format!("binding {addr}: {e}")))
}

/// Serves `replica`'s HTTP app on `http` and its gRPC services on `grpc`
/// until `shutdown` is cancelled.
pub async fn serve_both(
    replica: &Replica,
    http: TcpListener,
    grpc: TcpListener,
    shutdown: CancellationToken,
) -> Result<()> {
    let state = AppState {
        shutdown: shutdown.clone(),
        ..AppState::from_replica(replica.clone())
    };
    // Either server failing stops the other: a half-running replica would
    // look healthy to one API while the other is down.
    let stop_on_error = |r: Result<()>| {
        if r.is_err() {
            shutdown.cancel();
        }
        r
    };
    let (http, grpc) = tokio::join!(
        async {
            let r = serve_http(http, state, shutdown.clone()).await;
            drain::phase("http_closed");
            stop_on_error(r)
        },
        async {
            let r = crate::grpc::serve_replica(replica, grpc, shutdown.clone()).await;
            drain::phase("grpc_closed");
            stop_on_error(r)
        },
    );
    http.and(grpc)
}

/// Serves the HTTP app on `listener` until `shutdown` is cancelled.
pub async fn serve_http(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
) -> Result<()> {
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Internal(e.to_string()))?;
    tracing::info!(%addr, "HTTP listening");
    startup::phase("http_serving");
    axum::serve(listener, app(state))
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await
        .map_err(|e| Error::Internal(format!("HTTP server: {e}")))
}
