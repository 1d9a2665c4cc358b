//! Prometheus metrics (prometheus-client): one registry per process, served
//! at `/metrics`. The HTTP layer records requests by route and status; other
//! parts (the gRPC side) register their own metrics with [`Metrics::register`].

mod approvals;
pub mod freezes;
mod grpc;
mod held;
mod local_gates;
mod rollout;
mod would_hold;

use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

pub use approvals::ApprovalMetrics;
pub use grpc::{EndLabels, GrpcMetrics};
pub use held::HeldObjectMetrics;
pub use local_gates::LocalGateMetrics;
pub use rollout::RolloutMetrics;
pub use would_hold::WouldHoldMetrics;

/// Labels of the HTTP metrics.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    pub method: String,
    /// The route template (`/api/v1/gates/{name}`), never the raw path, so
    /// cardinality stays bounded.
    pub route: String,
    pub status: u16,
}

type HistogramFamily = Family<HttpLabels, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// The process's metrics registry and the HTTP metrics. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Metrics {
    registry: Arc<Mutex<Registry>>,
    http_requests: Family<HttpLabels, Counter>,
    http_duration: HistogramFamily,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry (prefix `fleetgate_hub`) with the HTTP metrics registered.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("fleetgate_hub");
        let http_requests = Family::<HttpLabels, Counter>::default();
        let http_duration: HistogramFamily = Family::new_with_constructor(duration_histogram);
        registry.register(
            "http_requests",
            "HTTP requests by method, route and status",
            http_requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "HTTP request duration by method, route and status",
            http_duration.clone(),
        );
        freezes::register(&mut registry);
        Self {
            registry: Arc::new(Mutex::new(registry)),
            http_requests,
            http_duration,
        }
    }

    /// Lets other components register their metrics.
    pub fn register(&self, f: impl FnOnce(&mut Registry)) {
        let mut r = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut r);
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        let r = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        prometheus_client::encoding::text::encode(&mut out, &r)?;
        Ok(out)
    }

    /// Counts one HTTP request (the API layer's middleware calls this).
    pub fn observe(&self, labels: HttpLabels, seconds: f64) {
        self.http_requests.get_or_create(&labels).inc();
        self.http_duration.get_or_create(&labels).observe(seconds);
    }
}
