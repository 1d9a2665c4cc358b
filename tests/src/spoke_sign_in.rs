//! A spoke's sign-in as the end-to-end identity tests try it by hand, beside the real spoke
//! process: one `Connect` over real gRPC presenting a token ([`connect`]), the refusal it
//! must get ([`unauthenticated`]), and the hub's count of refused spokes read from its
//! `/metrics` ([`refusals`]).

use std::time::Duration;

use fleetgate_proto::v1::spoke_service_client::SpokeServiceClient;
use fleetgate_proto::v1::{self as pb, spoke_message};
use tokio_stream::wrappers::ReceiverStream;

use crate::Rest;

/// One Connect attempt as a spoke of `cluster` presenting `token` to the hub's gRPC port
/// `grpc`: Ok once the hub accepted the stream (its first answer arrived, within 20 s),
/// else the hub's status.
pub async fn connect(grpc: u16, cluster: &str, token: &str) -> Result<(), tonic::Status> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{grpc}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .expect("gRPC connect");
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(pb::SpokeMessage {
        msg: Some(spoke_message::Msg::Hello(pb::Hello {
            cluster: cluster.into(),
            spoke_version: "test".into(),
            ..Default::default()
        })),
    })
    .await
    .unwrap();
    let mut req = tonic::Request::new(ReceiverStream::new(rx));
    req.metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    req.metadata_mut()
        .insert("fleetgate-cluster", cluster.parse().unwrap());
    let mut stream = SpokeServiceClient::new(channel)
        .connect(req)
        .await?
        .into_inner();
    tokio::time::timeout(Duration::from_secs(20), stream.message())
        .await
        .expect("an answer in time")?;
    Ok(())
}

/// Asserts that `r` is an UNAUTHENTICATED refusal whose message holds `needle`.
pub fn unauthenticated(r: Result<(), tonic::Status>, needle: &str) {
    let status = r.expect_err("refused");
    assert_eq!(status.code(), tonic::Code::Unauthenticated, "{status:?}");
    assert!(
        status.message().contains(needle),
        "{needle:?} not in {status:?}"
    );
}

/// `fleetgate_hub_identity_refusals_total{flow="spoke",reason}` as the hub serves it now
/// (0 before the first).
pub async fn refusals(rest: &Rest, reason: &str) -> u64 {
    let text = rest
        .http
        .get(format!("{}/metrics", rest.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let series =
        format!("fleetgate_hub_identity_refusals_total{{flow=\"spoke\",reason=\"{reason}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .map_or(0, |n| n.trim().parse::<f64>().unwrap() as u64)
}
