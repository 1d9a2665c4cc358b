//! A rotated secret signs beside the new one for the overlap only.

use super::*;

/// The `v1,` signatures of a message.
fn signatures(h: &HeaderMap) -> usize {
    h["webhook-signature"]
        .to_str()
        .unwrap()
        .split(' ')
        .filter(|s| s.starts_with("v1,"))
        .count()
}

#[tokio::test]
async fn a_rotated_secret_signs_beside_the_new_one_for_the_overlap_only() {
    let hub = Hub::new().await;
    let (r, router) = replica_with(&hub, "r1", &notify_support::opts());
    let (url, mut rx) = receiver(0).await;
    let old = subscribe(&router, common::ADMIN, json!({"name": "ops", "url": url})).await;
    let (status, rotated) = call(
        &router,
        Method::POST,
        "/api/v1/webhooks/ops/rotate-secret",
        Some(json!({"overlap": "1h"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let new = rotated["secret"].as_str().unwrap().to_string();
    assert_ne!(new, old);
    assert_eq!(
        instant(&rotated["webhook"]["previousSecretExpiresAt"]),
        t0() + chrono::Duration::hours(1)
    );

    // During the overlap: two signatures; the reference library accepts
    // the message with either secret.
    enqueue_numbered(&hub, 0).await;
    assert_eq!(tick(&hub, &r).await, 1);
    let (h, _, raw) = next(&mut rx).await;
    assert_eq!(signatures(&h), 2, "{h:?}");
    verify(&new, &h, &raw);
    verify(&old, &h, &raw);

    // A second before its end: still both.
    hub.clock
        .set(t0() + chrono::Duration::hours(1) - chrono::Duration::seconds(1));
    enqueue_numbered(&hub, 1).await;
    assert_eq!(tick(&hub, &r).await, 1);
    let (h, _, raw) = next(&mut rx).await;
    assert_eq!(signatures(&h), 2, "{h:?}");
    verify(&old, &h, &raw);

    // After the overlap: the new secret only; the old one no longer verifies.
    hub.clock.set(t0() + chrono::Duration::hours(1));
    enqueue_numbered(&hub, 2).await;
    assert_eq!(tick(&hub, &r).await, 1);
    let (h, _, raw) = next(&mut rx).await;
    assert_eq!(signatures(&h), 1, "{h:?}");
    verify(&new, &h, &raw);
    assert!(
        standardwebhooks::Webhook::new(&old)
            .unwrap()
            .verify(&raw, &h)
            .is_err(),
        "the old secret no longer signs"
    );
}
