//! The gRPC server of one replica: spoke + admin services, grpc.health.v1,
//! server reflection (v1 and v1alpha), HTTP/2 keepalive, small stream
//! windows, max connection age, optional TLS/mTLS from PEM files, and a
//! graceful drain on shutdown.

use std::path::PathBuf;
use std::time::Duration;

use fleetgate_proto::v1::admin_service_server::AdminServiceServer;
use fleetgate_proto::v1::spoke_service_server::SpokeServiceServer;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

use super::admin::AdminApi;
use super::spoke::SpokeApi;
use crate::options::GrpcOptions;
use crate::replica::Replica;
use crate::{Error, Result};

/// The TLS settings of `opts`, if it enables TLS.
fn tls(opts: &GrpcOptions) -> Result<Option<ServerTlsConfig>> {
    let (Some(cert), Some(key)) = (&opts.grpc_tls_cert, &opts.grpc_tls_key) else {
        return Ok(None);
    };
    let read = |flag: &str, p: &PathBuf| {
        std::fs::read(p).map_err(|e| Error::invalid(flag, format!("{}: {e}", p.display())))
    };
    let mut tls = ServerTlsConfig::new().identity(Identity::from_pem(
        read("--grpc-tls-cert", cert)?,
        read("--grpc-tls-key", key)?,
    ));
    if let Some(ca) = &opts.grpc_client_ca {
        tls = tls.client_ca_root(Certificate::from_pem(read("--grpc-client-ca", ca)?));
    }
    Ok(Some(tls))
}

/// The connections accepted on `listener`, each with `TCP_NODELAY` and TCP keepalive set.
///
/// `Server::tcp_nodelay`/`tcp_keepalive` apply only when tonic binds the listener itself
/// (`serve`); with `serve_with_incoming*` the incoming stream's sockets are used as they
/// are. Without `TCP_NODELAY` a unary answer written in two segments (headers, then data
/// and trailers) waits for the client's delayed ACK: ~40 ms on every admin call on Linux.
fn incoming(listener: TcpListener) -> TcpIncoming {
    TcpIncoming::from(listener)
        .with_nodelay(Some(true))
        .with_keepalive(Some(TCP_KEEPALIVE))
}

/// Idle time before TCP keepalive probes a connection.
const TCP_KEEPALIVE: Duration = Duration::from_secs(60);

/// How long a draining replica waits for connections to close after its last
/// spoke stream ended (unary admin calls in flight finish within it).
const CLOSE_GRACE: Duration = Duration::from_millis(250);

/// Serves `replica`'s spoke and admin services on `listener` until
/// `shutdown` is cancelled, then drains: health turns NOT_SERVING and every
/// stream ends with status OK (spokes reconnect to another replica). The
/// replica's tasks run around it ([`Replica::run`]).
pub async fn serve_replica(
    replica: &Replica,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<()> {
    let opts = &replica.grpc;
    let spoke = SpokeApi::new(replica, shutdown.clone());
    let streams = spoke.clone();
    let admin = AdminApi::new(replica, shutdown.clone());

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
        // TCP_NODELAY and TCP keepalive are set by `incoming` (the builder's are ignored
        // with a listener of our own).
        // Snapshots are small: small windows bound per-stream buffering with
        // thousands of streams.
        .initial_stream_window_size(64 * 1024)
        .initial_connection_window_size(256 * 1024)
        .max_concurrent_streams(128)
        // Backstop behind the jittered stream age: connections are recycled,
        // so an L4 load balancer spreads spokes over new replicas.
        .max_connection_age(opts.spoke_stream_max_age.mul_f64(1.2))
        .max_connection_age_grace(Duration::from_secs(30));
    if let Some(tls) = tls(opts)? {
        builder = builder
            .tls_config(tls)
            .map_err(|e| Error::invalid("--grpc-tls-cert", e.to_string()))?;
    }
    let addr = listener.local_addr().ok();
    tracing::info!(?addr, replica = %replica.id(), "gRPC listening");
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
    let serving = builder
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        // One limit for both ends of the spoke stream: the spoke decodes with it, and the
        // budgets keep a snapshot within it (an over-budget cluster gets a closing snapshot).
        .add_service(
            SpokeServiceServer::new(spoke)
                .max_encoding_message_size(fleetgate_policy::budgets::GRPC_MAX_MESSAGE_BYTES),
        )
        .add_service(AdminServiceServer::new(admin))
        .serve_with_incoming_shutdown(incoming(listener), drain);
    // The listener closes at the signal, and every spoke stream ends at once
    // with OK. Their connections then close as the spokes process the end;
    // a spoke slow to do so must not hold up the replica's exit (a single
    // replica's whole fleet waits for it), so the wait is bounded.
    let bounded = async {
        shutdown.cancelled().await;
        streams.streams_ended().await;
        replica.streams_drained.cancel();
        tokio::time::sleep(CLOSE_GRACE).await;
    };
    tokio::select! {
        result = serving => result.map_err(|e| Error::Internal(format!("gRPC server: {e}"))),
        () = bounded => {
            tracing::info!(grace = ?CLOSE_GRACE, "spoke streams ended; not waiting longer for their connections to close");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::net::{TcpListener, TcpStream};
    use tokio_stream::StreamExt;

    use super::incoming;

    /// Every connection the gRPC server accepts has `TCP_NODELAY` set (a listener handed to
    /// tonic's `serve_with_incoming` does not get the builder's socket options).
    #[tokio::test]
    async fn accepted_connections_have_tcp_nodelay() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut accepted = Box::pin(incoming(listener));
        for _ in 0..2 {
            let client = TcpStream::connect(addr).await.expect("connect");
            let server = tokio::time::timeout(Duration::from_secs(10), accepted.next())
                .await
                .expect("accepted within 10 s")
                .expect("the listener is open")
                .expect("accept");
            assert!(server.nodelay().expect("TCP_NODELAY readable"));
            assert_eq!(server.peer_addr().ok(), client.local_addr().ok());
        }
    }
}
