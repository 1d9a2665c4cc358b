//! The spoke's small HTTP listener: `/metrics` (Prometheus text), `/healthz`
//! (the process runs) and `/readyz` (every Flux watch has listed once, the
//! first reconcile pass ran, and the snapshot in force is persisted).

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use axum::{
    Router, extract::State, http::StatusCode, http::header, response::IntoResponse, routing::get,
};
use tokio::{net::TcpListener, sync::watch};
use tokio_util::sync::CancellationToken;

use crate::{
    error::{Error, Result},
    serve::metrics::Metrics,
};

/// What the handlers read.
#[derive(Clone)]
pub struct HealthState {
    pub metrics: Arc<Metrics>,
    pub ready: Arc<AtomicBool>,
    pub persistence: watch::Receiver<crate::hub::snapshot_store::Persistence>,
}

/// The router (separate from serving, so tests can drive it).
pub fn app(state: HealthState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(state)
}

async fn metrics(State(state): State<HealthState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(),
    )
}

/// Not ready while the snapshot in force cannot be persisted: the spoke keeps enforcing it,
/// but a restart without the hub would enforce an older one (or none), so a rollout of the
/// spoke waits and `kubectl get pods` shows it.
async fn readyz(State(state): State<HealthState>) -> impl IntoResponse {
    if !state.ready.load(Ordering::Acquire) {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "watches not synced yet".to_owned(),
        );
    }
    if let Some(f) = &state.persistence.borrow().failing {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the snapshot in force (revision {}) is not persisted: {}",
                f.revision, f.error
            ),
        );
    }
    (StatusCode::OK, "ready".to_owned())
}

/// Serves `router` (the health routes, and what else the spoke answers over
/// HTTP) on `listener` until `shutdown` fires.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: CancellationToken,
) -> Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .map_err(Error::Http)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn readyz_follows_the_flag_and_persistence_and_metrics_are_served() {
        let persistence = watch::channel(crate::hub::snapshot_store::Persistence::default()).0;
        let state = HealthState {
            metrics: Arc::new(Metrics::new()),
            ready: Arc::new(AtomicBool::new(false)),
            persistence: persistence.subscribe(),
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(serve(listener, app(state.clone()), shutdown.clone()));

        assert_eq!(
            reqwest::get(format!("{base}/healthz"))
                .await
                .unwrap()
                .status(),
            200
        );
        assert_eq!(
            reqwest::get(format!("{base}/readyz"))
                .await
                .unwrap()
                .status(),
            503
        );
        state.ready.store(true, Ordering::Release);
        assert_eq!(
            reqwest::get(format!("{base}/readyz"))
                .await
                .unwrap()
                .status(),
            200
        );
        persistence.send_modify(|p| {
            p.failing = Some(crate::hub::snapshot_store::Failing {
                revision: 4,
                error: "kubernetes API: forbidden".into(),
                since: chrono::Utc::now(),
                attempts: 1,
            })
        });
        let not_ready = reqwest::get(format!("{base}/readyz")).await.unwrap();
        assert_eq!(not_ready.status(), 503);
        assert_eq!(
            not_ready.text().await.unwrap(),
            "the snapshot in force (revision 4) is not persisted: kubernetes API: forbidden"
        );
        let metrics = reqwest::get(format!("{base}/metrics")).await.unwrap();
        assert!(
            metrics.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/openmetrics-text")
        );
        assert!(
            metrics
                .text()
                .await
                .unwrap()
                .contains("fleetgate_spoke_objects_governed")
        );

        shutdown.cancel();
        server.await.unwrap().unwrap();
    }
}
