//! Who may open a spoke stream: missing, unknown and API tokens are refused, a cluster's
//! token naming another cluster is denied, the first message must be a Hello; rotating
//! the token or deleting the cluster ends a connected stream.

use fleetgate_proto::v1 as pb;
use serde_json::json;
use tonic::Code;

use crate::common::Hub;
use crate::grpc_support::{self, Grpc, TestSpoke, within};
use crate::root;

#[tokio::test]
async fn spoke_auth_matrix() {
    let hub = Hub::new().await;
    let t1 = hub.register("c1", json!({})).await;
    let _t2 = hub.register("c2", json!({})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let ch = || grpc.channel.clone();

    // Missing / unknown / API tokens: refused before the stream starts.
    let mut client = grpc.spoke_client();
    let (_tx, rx) = tokio::sync::mpsc::channel::<pb::SpokeMessage>(1);
    let err = client
        .connect(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
    for bad in ["fgs_not-a-real-token", hub.admin.as_str()] {
        let err = TestSpoke::connect(ch(), bad, "c1", 0).await.err().unwrap();
        assert_eq!(err.code(), Code::Unauthenticated, "{bad}: {err:?}");
    }

    // c1's token naming c2: permission denied, and no snapshot of c2 leaks.
    let mut s = TestSpoke::connect(ch(), &t1, "c2", 0).await.unwrap();
    let err = s.next().await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    assert!(err.message().contains("c1"), "{err:?}");

    // The first message must be a Hello.
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(pb::SpokeMessage {
        msg: Some(pb::spoke_message::Msg::Report(pb::StatusReport::default())),
    })
    .await
    .unwrap();
    let mut stream = client
        .connect(grpc_support::authed(
            tokio_stream::wrappers::ReceiverStream::new(rx),
            &t1,
        ))
        .await
        .unwrap()
        .into_inner();
    let err = within("hello error", stream.message()).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("hello:"), "{err:?}");
    grpc.stop().await;
}

#[tokio::test]
async fn rotated_token_and_deleted_cluster_end_the_stream() {
    let hub = Hub::new().await;
    let t1 = hub.register("c1", json!({})).await;
    let t2 = hub.register("c2", json!({})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;

    let mut s1 = TestSpoke::connect(grpc.channel.clone(), &t1, "c1", 0)
        .await
        .unwrap();
    s1.snapshot().await;
    let rotated = hub
        .service
        .rotate_cluster_token(&root(), "c1", Some("leaked"))
        .await
        .unwrap();
    let err = s1.error().await;
    assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
    let err = TestSpoke::connect(grpc.channel.clone(), &t1, "c1", 0)
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), Code::Unauthenticated);
    let mut fresh = TestSpoke::connect(grpc.channel.clone(), &rotated.token, "c1", 0)
        .await
        .unwrap();
    assert_eq!(fresh.snapshot().await.cluster, "c1");

    let mut s2 = TestSpoke::connect(grpc.channel.clone(), &t2, "c2", 0)
        .await
        .unwrap();
    s2.snapshot().await;
    hub.service
        .delete_cluster(&root(), "c2", None)
        .await
        .unwrap();
    let err = s2.error().await;
    assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
    grpc.stop().await;
}

/// The replica's warm start (every cluster's token hash and snapshot read once after its
/// listener listens) signs spokes in from memory, and a rotation or deletion still takes
/// effect: its change notification drops the cluster's entry, so the old token is then
/// asked of the database and refused, and a stream signed in from the entry before the
/// notification is re-checked by it and ends.
#[tokio::test]
async fn a_warm_start_keeps_revocation_immediate() {
    use fleetgate_hub::auth::hash_token;

    let hub = Hub::new().await;
    let t1 = hub.register("c1", json!({})).await;
    let t2 = hub.register("c2", json!({})).await;
    let t3 = hub.register("c3", json!({})).await;
    let served = grpc_support::served::Served::of(hub.service.clone()).await;
    let fanout = served.replica.fanout.clone();
    let warm = |token: &str| fanout.warm_cluster_of(&hash_token(token));
    within("the warm start", async {
        while warm(&t3).is_none() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(warm(&t1).as_deref(), Some("c1"));
    assert_eq!(warm(&t2).as_deref(), Some("c2"));
    assert_eq!(warm("fgs_not-a-real-token"), None);
    let channel = || served.grpc.channel.clone();

    // c1's token naming c3: denied as ever, nothing of c3 sent.
    let mut s = TestSpoke::connect(channel(), &t1, "c3", 0).await.unwrap();
    let err = s.next().await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");

    // Signed in from the warm entry, then rotated: the notification ends the stream.
    let mut s1 = TestSpoke::connect(channel(), &t1, "c1", 0).await.unwrap();
    assert_eq!(s1.snapshot().await.cluster, "c1");
    let rotated = hub
        .service
        .rotate_cluster_token(&root(), "c1", Some("leaked"))
        .await
        .unwrap();
    let err = s1.error().await;
    assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
    assert_eq!(warm(&t1), None);
    refused(channel(), &t1, "c1").await;
    let mut fresh = TestSpoke::connect(channel(), &rotated.token, "c1", 0)
        .await
        .unwrap();
    assert_eq!(fresh.snapshot().await.cluster, "c1");

    // Rotated while its spoke is away: once the notification is in, the old token is refused.
    let rotated2 = hub
        .service
        .rotate_cluster_token(&root(), "c2", None)
        .await
        .unwrap();
    forgotten(&fanout, &t2, "the notification naming c2").await;
    refused(channel(), &t2, "c2").await;
    let mut s2 = TestSpoke::connect(channel(), &rotated2.token, "c2", 0)
        .await
        .unwrap();
    assert_eq!(s2.snapshot().await.cluster, "c2");

    // Deleted while its spoke is away: refused.
    hub.service
        .delete_cluster(&root(), "c3", None)
        .await
        .unwrap();
    forgotten(&fanout, &t3, "the notification naming c3").await;
    refused(channel(), &t3, "c3").await;
    served.stop().await;
}

/// Waits (bounded) until the change notification has dropped `token`'s warm entry (there is
/// no event to await: the listener drops it when the notification arrives).
async fn forgotten(fanout: &fleetgate_hub_core::fanout::Fanout, token: &str, what: &str) {
    let hash = fleetgate_hub::auth::hash_token(token);
    within(what, async {
        while fanout.warm_cluster_of(&hash).is_some() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// `token` signing in as `cluster` is refused as unauthenticated.
async fn refused(channel: tonic::transport::Channel, token: &str, cluster: &str) {
    let err = TestSpoke::connect(channel, token, cluster, 0)
        .await
        .err()
        .unwrap_or_else(|| panic!("{cluster}'s old token was accepted"));
    assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
}
