//! The benchmark's one error type: setup failures, timeouts (a phase that did
//! not finish in its bound fails the run instead of hanging), and I/O.

/// A benchmark failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Preparing a phase failed (a process did not start, a limit is too low).
    #[error("setup: {0}")]
    Setup(String),
    /// A phase did not complete within its bound.
    #[error("timed out: {0}")]
    Timeout(String),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("hub: {0}")]
    Hub(#[from] fleetgate_hub::Error),
    #[error("gRPC transport: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("gRPC: {0}")]
    Status(#[from] tonic::Status),
    #[error("HTTP: {0}")]
    Http(#[from] reqwest::Error),
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

/// Result with the benchmark's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A setup error from anything printable.
    pub fn setup(msg: impl std::fmt::Display) -> Self {
        Self::Setup(msg.to_string())
    }
}
