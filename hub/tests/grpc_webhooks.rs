//! Webhook subscriptions over the gRPC AdminService on a real socket: the
//! REST operations with the same roles (admin only), validation naming the
//! field with nothing written, a test message and a real delivery reaching a
//! local HTTP receiver, its attempts, a redelivery with the same
//! `webhook-id`, secret rotation and deletion.

mod common;
mod grpc_support;

use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use common::Hub;
use fleetgate_hub::config::HttpOptions;
use fleetgate_hub::egress::EgressOptions;
use fleetgate_hub::notify::NotifyOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_proto::v1 as pb;
use grpc_support::{Grpc, authed, within};
use serde_json::json;
use tokio::sync::mpsc;
use tonic::Code;

/// A receiver answering 204; every request's headers and body on the channel.
async fn receiver() -> (String, mpsc::UnboundedReceiver<(HeaderMap, Bytes)>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: Bytes| {
            let tx = tx.clone();
            async move {
                let _ = tx.send((headers, body));
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

async fn next(rx: &mut mpsc::UnboundedReceiver<(HeaderMap, Bytes)>) -> (String, serde_json::Value) {
    let (h, b) = within("a delivery", rx.recv())
        .await
        .expect("receiver open");
    let id = h["webhook-id"].to_str().unwrap().to_string();
    (id, serde_json::from_slice(&b).unwrap())
}

#[tokio::test]
async fn webhooks_over_grpc() {
    let hub = Hub::new().await;
    hub.register("c1", json!({"env": "prod"})).await;
    hub.simple_gate("g", &["c1"], "open").await;
    let opts = NotifyOptions {
        webhook_allow_private: true,
        webhook_allow_http: true,
        webhook_poll: Duration::from_millis(50),
        ..NotifyOptions::default()
    };
    let replica = Replica::new(hub.service.clone(), HttpOptions::default(), Grpc::opts())
        .with_notify(&opts, &EgressOptions::default())
        .unwrap();
    let grpc = Grpc::start_replica(replica).await;
    let mut admin = grpc.admin();
    let (url, mut rx) = receiver().await;
    let spec = |url: &str| pb::WebhookSpec {
        name: "ops".into(),
        url: url.into(),
        events: vec!["override.*".into()],
        ..Default::default()
    };
    let create =
        |s: pb::WebhookSpec, token: &str| authed(pb::CreateWebhookRequest { spec: Some(s) }, token);

    // Admin only, as in REST.
    for token in [&hub.viewer, &hub.operator] {
        let err = admin
            .create_webhook(create(spec(&url), token))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
        let err = admin
            .list_webhooks(authed(pb::ListWebhooksRequest {}, token))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    }
    // Bad input names the field and writes nothing.
    let audit_before = hub.audit_count().await;
    let bad = [
        (spec("ftp://example.com/x"), "url: "),
        (
            pb::WebhookSpec {
                events: vec!["gate.exploded".into()],
                ..spec(&url)
            },
            "events[0]: ",
        ),
        (
            pb::WebhookSpec {
                cluster_selector: "env in".into(),
                ..spec(&url)
            },
            "spec.cluster_selector: ",
        ),
        (
            pb::WebhookSpec {
                name: "Not A Label".into(),
                ..spec(&url)
            },
            "name: ",
        ),
    ];
    for (s, field) in bad {
        let err = admin
            .create_webhook(create(s, &hub.admin))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
        assert!(err.message().starts_with(field), "{field}: {err:?}");
    }
    assert_eq!(hub.audit_count().await, audit_before, "nothing written");
    let list = admin
        .list_webhooks(authed(pb::ListWebhooksRequest {}, &hub.admin))
        .await
        .unwrap()
        .into_inner();
    assert!(list.webhooks.is_empty());

    // Create: the secret once; REST sees the same subscription.
    let created = admin
        .create_webhook(create(spec(&url), &hub.admin))
        .await
        .unwrap()
        .into_inner();
    assert!(created.secret.starts_with("whsec_"), "{}", created.secret);
    let info = created.webhook.unwrap();
    assert_eq!(info.spec.as_ref().unwrap().format, "standard");
    assert_eq!(info.spec.as_ref().unwrap().enabled, Some(true));
    let rest = hub.get("/api/v1/webhooks/ops").await;
    assert_eq!(rest.status, StatusCode::OK);
    assert_eq!(rest.body["id"], info.id);
    let err = admin
        .create_webhook(create(spec(&url), &hub.admin))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");

    // Update: a kubectl-syntax selector comes back as JSON.
    let updated = admin
        .update_webhook(authed(
            pb::UpdateWebhookRequest {
                name: "ops".into(),
                spec: Some(pb::WebhookSpec {
                    cluster_selector: "env=prod".into(),
                    ..spec(&url)
                }),
            },
            &hub.admin,
        ))
        .await
        .unwrap()
        .into_inner();
    let sel: serde_json::Value =
        serde_json::from_str(&updated.spec.unwrap().cluster_selector).unwrap();
    assert_eq!(sel["matchLabels"]["env"], "prod");

    // A test message reaches the receiver with the id the answer names.
    let t = admin
        .test_webhook(authed(
            pb::TestWebhookRequest { name: "ops".into() },
            &hub.admin,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(t.ok, "{t:?}");
    assert_eq!(t.status, 204);
    let (id, body) = next(&mut rx).await;
    assert_eq!(id, t.message_id);
    assert_eq!(body["type"], "webhook.test");

    // A real event: an override made over gRPC is delivered, listed with its attempt.
    admin
        .create_override(authed(
            pb::CreateOverrideRequest {
                gate: "g".into(),
                state: "closed".into(),
                reason: "incident".into(),
                ..Default::default()
            },
            &hub.admin,
        ))
        .await
        .unwrap();
    let (first_id, body) = next(&mut rx).await;
    assert_eq!(body["type"], "override.created", "{body}");
    let deliveries = within("the delivery to be recorded as delivered", async {
        loop {
            let d = admin
                .list_webhook_deliveries(authed(
                    pb::ListWebhookDeliveriesRequest {
                        name: "ops".into(),
                        ..Default::default()
                    },
                    &hub.admin,
                ))
                .await
                .unwrap()
                .into_inner()
                .deliveries;
            if d.iter().all(|d| d.state == "delivered") && !d.is_empty() {
                return d;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert_eq!(deliveries.len(), 1, "{deliveries:?}");
    assert_eq!(deliveries[0].message_id, first_id);
    let one = admin
        .get_webhook_delivery(authed(
            pb::GetWebhookDeliveryRequest {
                name: "ops".into(),
                id: deliveries[0].id,
            },
            &hub.admin,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(one.attempt_log.len(), 1);
    assert_eq!(one.attempt_log[0].status, 204);
    let err = admin
        .get_webhook_delivery(authed(
            pb::GetWebhookDeliveryRequest {
                name: "ops".into(),
                id: deliveries[0].id + 1000,
            },
            &hub.admin,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);

    // Redeliver: the same webhook-id again.
    admin
        .redeliver_webhook(authed(
            pb::GetWebhookDeliveryRequest {
                name: "ops".into(),
                id: deliveries[0].id,
            },
            &hub.admin,
        ))
        .await
        .unwrap();
    let (again, _) = next(&mut rx).await;
    assert_eq!(again, first_id);

    // Rotation: a new secret, the old one valid for the overlap; bad overlap named.
    let err = admin
        .rotate_webhook_secret(authed(
            pb::RotateWebhookSecretRequest {
                name: "ops".into(),
                overlap: "1000h".into(),
            },
            &hub.admin,
        ))
        .await
        .unwrap_err();
    assert!(err.message().starts_with("overlap: "), "{err:?}");
    let rotated = admin
        .rotate_webhook_secret(authed(
            pb::RotateWebhookSecretRequest {
                name: "ops".into(),
                overlap: "1h".into(),
            },
            &hub.admin,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_ne!(rotated.secret, created.secret);
    assert!(
        rotated
            .webhook
            .unwrap()
            .previous_secret_expires_at
            .is_some()
    );

    // Delete.
    admin
        .delete_webhook(authed(
            pb::DeleteWebhookRequest { name: "ops".into() },
            &hub.admin,
        ))
        .await
        .unwrap();
    let err = admin
        .get_webhook(authed(
            pb::GetWebhookRequest { name: "ops".into() },
            &hub.admin,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    grpc.stop().await;
}
