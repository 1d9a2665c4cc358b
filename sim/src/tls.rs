//! Optional HTTPS. client-go (kubectl) only sends bearer tokens over TLS (clientcmd reads
//! a kubeconfig's auth info only when the transport is TLS), so RBAC with kubectl needs it.
//! The certificate is a fixed, test-only one (`sim/tls/`: a CA and a leaf for 127.0.0.1
//! and localhost, valid until 2126); generated kubeconfigs carry the CA.

use std::sync::Arc;

use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::error::Error;

/// PEM of the CA that signed the server certificate (trust it to talk to the simulator).
pub const CA_PEM: &str = include_str!("../tls/ca.crt");
const CERT_PEM: &str = include_str!("../tls/server.crt");
const KEY_PEM: &str = include_str!("../tls/server.key");

fn acceptor() -> Result<TlsAcceptor, Error> {
    let tls_err = |e: &dyn std::fmt::Display| Error::Config(format!("TLS: {e}"));
    let certs = CertificateDer::pem_slice_iter(CERT_PEM.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls_err(&e))?;
    let key = PrivateKeyDer::from_pem_slice(KEY_PEM.as_bytes()).map_err(|e| tls_err(&e))?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| tls_err(&e))?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| tls_err(&e))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Serves `app` over HTTPS until `stop`; open connections are shut down gracefully.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    stop: CancellationToken,
) -> Result<(), Error> {
    let acceptor = acceptor()?;
    loop {
        let (tcp, _) = tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::debug!(error = %e, "accept failed");
                    continue;
                }
            },
        };
        let (acceptor, app, stop) = (acceptor.clone(), app.clone(), stop.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = TowerToHyperService::new(app);
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service)
                .with_upgrades();
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn embedded_certificate_loads() {
        assert!(super::acceptor().is_ok());
    }
}
