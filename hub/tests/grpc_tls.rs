//! TLS and mutual TLS on the gRPC listener, with certificates made by the
//! `openssl` CLI: a client trusting the CA gets through, plaintext does not;
//! with a client CA configured, only clients presenting a certificate do.

mod common;
mod grpc_support;

use std::path::Path;
use std::time::Duration;

use common::Hub;
use fleetgate_hub::grpc::GrpcOptions;
use fleetgate_tests::pki::make_pki;
use grpc_support::Grpc;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

fn tls_channel(dir: &Path, addr: std::net::SocketAddr, with_identity: bool) -> Channel {
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read("ca.crt")))
        .domain_name("localhost");
    if with_identity {
        tls = tls.identity(Identity::from_pem(read("client.crt"), read("client.key")));
    }
    Endpoint::from_shared(format!("https://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(5))
        .tls_config(tls)
        .unwrap()
        .connect_lazy()
}

async fn healthy(channel: Channel) -> Result<(), tonic::Status> {
    let mut h = HealthClient::new(channel);
    tokio::time::timeout(
        grpc_support::WAIT,
        h.check(HealthCheckRequest {
            service: String::new(),
        }),
    )
    .await
    .expect("health check timed out")
    .map(|_| ())
}

#[tokio::test]
async fn tls_and_mutual_tls() {
    let dir = tempfile::tempdir().unwrap();
    make_pki(dir.path());
    let hub = Hub::new().await;
    let base = GrpcOptions {
        grpc_tls_cert: Some(dir.path().join("server.crt")),
        grpc_tls_key: Some(dir.path().join("server.key")),
        ..Grpc::opts()
    };

    // TLS: a client trusting the CA connects; plaintext is refused.
    let grpc = Grpc::start(hub.service.clone(), base.clone()).await;
    healthy(tls_channel(dir.path(), grpc.addr, false))
        .await
        .unwrap();
    let plain = grpc_support::connect(&format!("http://{}", grpc.addr)).await;
    assert!(healthy(plain).await.is_err());
    grpc.stop().await;

    // mTLS: a client certificate signed by the client CA is required.
    let mtls = GrpcOptions {
        grpc_client_ca: Some(dir.path().join("ca.crt")),
        ..base
    };
    let grpc = Grpc::start(hub.service.clone(), mtls).await;
    assert!(
        healthy(tls_channel(dir.path(), grpc.addr, false))
            .await
            .is_err()
    );
    healthy(tls_channel(dir.path(), grpc.addr, true))
        .await
        .unwrap();
    grpc.stop().await;
}
