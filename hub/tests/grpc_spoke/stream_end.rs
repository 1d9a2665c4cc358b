//! How spoke streams end cleanly: a drain ends every stream and writes the reports it
//! received first; a stream at its age limit ends and the spoke resumes without a
//! snapshot.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::json;

use crate::common::Hub;
use crate::grpc_support::{Grpc, TestSpoke, kustomization, within};

#[tokio::test]
async fn drain_ends_every_stream_cleanly_and_writes_the_reports_it_received() {
    let hub = Hub::new().await;
    // Reports are written only by the drain: the batcher's period is longer
    // than the test.
    let opts = fleetgate_hub::grpc::GrpcOptions {
        report_flush_ms: 600_000,
        ..Grpc::opts()
    };
    let grpc = Grpc::start(hub.service.clone(), opts).await;
    let names = ["c1", "c2", "c3"];
    let mut spokes = Vec::new();
    for name in names {
        let token = hub.register(name, json!({})).await;
        let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, name, 0)
            .await
            .unwrap();
        let s = spoke.snapshot().await;
        spoke
            .report(s.revision, vec![kustomization("apps", name, false, &[])])
            .await;
        spokes.push(spoke);
    }
    within("the hub to receive every report", async {
        while grpc.metrics.reports_received.get() < names.len() as u64 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    for name in names {
        let r = hub.get(&format!("/api/v1/clusters/{name}/status")).await;
        let objects = r.body["objects"].as_array();
        assert!(
            objects.is_none_or(Vec::is_empty),
            "written before the drain: {}",
            r.text
        );
    }
    grpc.shutdown.cancel();
    for spoke in &mut spokes {
        spoke.clean_end("the stream to end").await;
    }
    grpc.stop().await;
    // Every report received before the drain is stored, and no cluster reads
    // as connected to the stopped replica.
    for name in names {
        let r = hub.get(&format!("/api/v1/clusters/{name}/status")).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(r.body["objects"][0]["name"], name, "{}", r.text);
        assert_eq!(r.body["cluster"]["connected"], false, "{}", r.text);
    }
}

#[tokio::test]
async fn streams_end_cleanly_at_their_age_limit_and_resume_without_a_snapshot() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({})).await;
    let opts = fleetgate_hub::grpc::GrpcOptions {
        // Well above the 300 ms keepalive, so the resumed stream's keepalive
        // comes before its own age limit.
        spoke_stream_max_age: Duration::from_secs(1),
        ..Grpc::opts()
    };
    let grpc = Grpc::start(hub.service.clone(), opts).await;
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    let s = spoke.snapshot().await;
    spoke.clean_end("the stream to reach its age limit").await;
    // The spoke reconnects holding the current revision: no snapshot resent.
    let mut again = TestSpoke::connect(grpc.channel.clone(), &token, "c1", s.revision)
        .await
        .unwrap();
    assert_eq!(again.expect_keepalive().await.revision, s.revision);
    grpc.stop().await;
}
