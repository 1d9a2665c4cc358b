//! A cluster registered with `spiffeId` gets a SPIFFE ID as the SPIFFE ID specification
//! spells one, over REST (422 naming `spiffeId`) and gRPC (INVALID_ARGUMENT naming it), and a
//! refused registration changes nothing (no cluster, no audit entry). Before, any
//! `spiffe://` text with a trust domain was taken (an uppercase trust domain, a port, dot
//! segments, a query), and no JWT-SVID SPIRE issues would ever match it.

mod common;
mod grpc_support;

use axum::http::StatusCode;
use common::Hub;
use fleetgate_proto::v1 as pb;
use grpc_support::{Grpc, authed, within};
use serde_json::json;

const ISSUER: &str = "https://oidc.spire.example.org";

/// SPIFFE IDs the specification does not allow, each with what the refusal names.
const REFUSED: &[(&str, &str)] = &[
    ("spiffe://Example.org/spoke", "uppercase"),
    ("SPIFFE://example.org/spoke", "scheme"),
    ("spiffe://example.org:8443/spoke", "a port"),
    ("spiffe://admin@example.org/spoke", "user info"),
    ("spiffe://example.org", "no path"),
    ("spiffe://example.org/ns//spoke", "empty path segment"),
    ("spiffe://example.org/ns/../spoke", "'..' path segment"),
    ("spiffe://example.org/ns/./spoke", "'.' path segment"),
    ("spiffe://example.org/spoke?x=1", "a query"),
    ("spiffe://example.org/spoke#f", "a fragment"),
    ("spiffe://example.org/sp%6Fke", "percent-encoding"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spiffe_id_is_checked_as_the_specification_spells_it() {
    let hub = Hub::new().await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut admin = grpc.admin();
    let audited = hub.audit_count().await;

    let long = format!("spiffe://example.org/{}", "a".repeat(2048));
    let refused = REFUSED
        .iter()
        .copied()
        .chain([(long.as_str(), "longer than 2048 bytes")]);
    for (i, (id, why)) in refused.enumerate() {
        let name = format!("c{i}");
        let r = hub
            .post_json(
                "/api/v1/clusters",
                &hub.admin,
                json!({"name": name, "issuer": ISSUER, "spiffeId": id}),
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{id}: {}",
            r.text
        );
        assert_eq!(r.body["error"]["field"], "spiffeId", "{id}: {}", r.text);
        assert!(r.text.contains(why), "{id}: {}", r.text);

        let req = pb::RegisterClusterRequest {
            name: name.clone(),
            issuer: ISSUER.into(),
            spiffe_id: id.into(),
            ..Default::default()
        };
        let status = within(
            "RegisterCluster",
            admin.register_cluster(authed(req, &hub.admin)),
        )
        .await
        .unwrap_err();
        assert_eq!(
            status.code(),
            tonic::Code::InvalidArgument,
            "{id}: {status:?}"
        );
        assert!(status.message().contains("spiffeId"), "{id}: {status:?}");
        assert!(status.message().contains(why), "{id}: {status:?}");
    }
    let clusters = hub.get("/api/v1/clusters").await;
    assert_eq!(clusters.body["items"], json!([]), "{}", clusters.text);
    assert_eq!(
        hub.audit_count().await,
        audited,
        "a refused registration was audited"
    );

    // The IDs SPIRE issues are taken as given, over both.
    let id = "spiffe://prod.example.org/ns/fleetgate-system/sa/fleetgate-spoke";
    let r = hub
        .post_json(
            "/api/v1/clusters",
            &hub.admin,
            json!({"name": "rest", "issuer": ISSUER, "spiffeId": id}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["cluster"]["identity"]["subject"], id, "{}", r.text);
    let req = pb::RegisterClusterRequest {
        name: "grpc".into(),
        issuer: ISSUER.into(),
        spiffe_id: "spiffe://td_1.example-org/spoke.v2".into(),
        ..Default::default()
    };
    within(
        "RegisterCluster",
        admin.register_cluster(authed(req, &hub.admin)),
    )
    .await
    .unwrap();
    grpc.stop().await;
}
