//! The spoke's one error type. Every fallible path returns it; `metric_label`
//! names the variant for the `fleetgate_spoke_reconcile_errors_total` counter.

/// Errors of the spoke.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),

    /// No usable Kubernetes client configuration.
    #[error("kubernetes client configuration: {0}")]
    KubeConfig(String),

    /// A snapshot (from the hub or the ConfigMap) is unusable; the previous one stays in force.
    #[error("invalid snapshot: {0}")]
    InvalidSnapshot(String),

    /// The persisted snapshot does not add up (JSON that does not parse, a shard missing,
    /// a hash or length that differs): treated as no persisted snapshot.
    #[error("persisted snapshot {configmap}: {reason}")]
    PersistedSnapshot { configmap: String, reason: String },

    /// The snapshot cannot be persisted whatever the API server says (over the budgets of
    /// `fleetgate_policy::budgets`).
    #[error("persisting the snapshot: {0}")]
    Persist(String),

    /// The hub rejected a call or the stream ended with an error status.
    #[error("hub: {0}")]
    Hub(#[from] tonic::Status),

    /// The connection to the hub could not be set up.
    #[error("hub connection: {0}")]
    HubTransport(#[from] tonic::transport::Error),

    /// Bad configuration (flags, token file, CA file).
    #[error("configuration: {0}")]
    Config(String),

    /// The metrics/health listener failed.
    #[error("http server: {0}")]
    Http(#[source] std::io::Error),
}

impl Error {
    /// A short, stable label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(kube::Error::Api(s)) if s.code == 409 => "conflict",
            Error::Kube(kube::Error::Api(s)) if s.code == 404 => "not_found",
            Error::Kube(kube::Error::Api(s)) if s.code == 403 => "forbidden",
            Error::Kube(_) => "kube",
            Error::KubeConfig(_) => "kube_config",
            Error::InvalidSnapshot(_) => "invalid_snapshot",
            Error::PersistedSnapshot { .. } => "persisted_snapshot",
            Error::Persist(_) => "persist",
            Error::Hub(_) => "hub",
            Error::HubTransport(_) => "hub_transport",
            Error::Config(_) => "config",
            Error::Http(_) => "http",
        }
    }

    /// True when the API server answered 409 Conflict (stale resourceVersion).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Kube(kube::Error::Api(s)) if s.code == 409)
    }

    /// True when the API server answered 404 Not Found.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Kube(kube::Error::Api(s)) if s.code == 404)
    }
}

/// The spoke's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
