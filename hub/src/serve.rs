//! `fleetgate-hub serve`: connect and migrate the database, ensure the
//! bootstrap admin token, then serve HTTP until the shutdown token fires
//! (SIGTERM/SIGINT in `main`), draining in-flight requests.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::ServeConfig;
use crate::fanout::Fanout;
use crate::fleet_feed::FleetFeed;
use crate::metrics::Metrics;
use crate::rest::{AppState, app};
use crate::service::Service;
use crate::{Result, db};

/// Prepares the database and the shared state: pool, migrations, bootstrap
/// admin token, metrics registry.
pub async fn prepare(config: &ServeConfig) -> Result<AppState> {
    let pool = db::connect(&config.database_url, config.db_max_connections).await?;
    db::migrate(&pool).await?;
    let service = Service::new(pool);
    if let Some(secret) = &config.admin_token {
        service.ensure_admin_token(secret).await?;
    }
    let fanout = Fanout::new(Arc::new(service.clone()));
    let fleet = FleetFeed::new(service.clone(), fanout.changes());
    let metrics = Metrics::new();
    metrics.register(|r| {
        r.register(
            "fleet_view_reads",
            "Fleet views read for WatchFleet and dashboard event streams (one per change, shared by all watchers)",
            fleet.reads_counter(),
        );
        r.register(
            "database_up",
            "1 while PostgreSQL answers the hub, 0 while it is unreachable (API calls then answer 503)",
            service.db_health().gauge(),
        );
    });
    Ok(AppState {
        fanout,
        fleet,
        shutdown: CancellationToken::new(),
        service,
        metrics,
        body_limit: config.http_body_limit,
        timeout: config.http_timeout(),
    })
}

/// Runs the hub until `shutdown` is cancelled.
pub async fn serve(config: ServeConfig, shutdown: CancellationToken) -> Result<()> {
    let state = AppState {
        shutdown: shutdown.clone(),
        ..prepare(&config).await?
    };
    let service = &state.service;
    tokio::spawn(
        service
            .db_health()
            .clone()
            .watch(service.pool().clone(), shutdown.clone()),
    );
    let listener = TcpListener::bind(config.http_addr)
        .await
        .map_err(|e| crate::Error::Internal(format!("binding {}: {e}", config.http_addr)))?;
    let grpc_listener = TcpListener::bind(config.grpc_addr)
        .await
        .map_err(|e| crate::Error::Internal(format!("binding {}: {e}", config.grpc_addr)))?;
    // Either server failing stops the other: a half-running replica would
    // look healthy to one API while the other is down.
    let stop_on_error = |r: Result<()>| {
        if r.is_err() {
            shutdown.cancel();
        }
        r
    };
    let (http, grpc) = tokio::join!(
        async { stop_on_error(serve_http(listener, state.clone(), shutdown.clone()).await) },
        async {
            stop_on_error(
                crate::grpc::server::serve_with_fanout(
                    state.service.clone(),
                    state.fanout.clone(),
                    state.fleet.clone(),
                    &state.metrics,
                    grpc_listener,
                    config.grpc.clone(),
                    shutdown.clone(),
                )
                .await,
            )
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
        .map_err(|e| crate::Error::Internal(e.to_string()))?;
    tracing::info!(%addr, "HTTP listening");
    axum::serve(listener, app(state))
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await
        .map_err(|e| crate::Error::Internal(format!("HTTP server: {e}")))
}
