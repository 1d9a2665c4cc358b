//! The operator's rollout commands over REST: pause, resume, abort and release-next
//! (who may, and when each is a conflict), approval before a wave, and release-next
//! ending a soak early.

use axum::http::{Method, StatusCode};

use crate::rollout_support::{THREE_WAVES, fleet};

#[tokio::test]
async fn pause_abort_release_next_and_approval() {
    let waves =
        "      - {name: canary, clusters: {names: [c1]}}\n      - {name: rest, approval: true}\n";
    let f = fleet("", waves).await;
    f.at(13, 0);
    f.step().await;
    // A viewer may not, an operator may.
    let r = f
        .hub
        .call(
            Method::POST,
            "/api/v1/gates/waves/rollout/pause",
            Some(&f.hub.viewer),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = f.command("pause").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["state"], "paused");
    assert_eq!(f.command("pause").await.status, StatusCode::CONFLICT);
    assert_eq!(f.command("bogus").await.status, StatusCode::NOT_FOUND);

    f.report(&["c1"], true).await;
    f.step().await;
    f.advance(15);
    assert!(
        f.step().await.is_empty(),
        "paused: no release after the soak"
    );
    assert_eq!(f.released().await, ["c1"]);
    assert_eq!(f.command("resume").await.status, StatusCode::OK);
    // Soaked, but the last wave waits for approval.
    f.step().await;
    let s = f.status().await;
    assert_eq!(s["waitingForApproval"], true, "{s}");
    assert_eq!(s["waves"][1]["state"], "waiting-approval");
    assert_eq!(f.released().await, ["c1"]);
    let r = f.command("release-next").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(f.released().await.len(), 6);
    assert_eq!(f.audit("rollout.release-next").await, 1);

    let r = f.command("abort").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["state"], "aborted");
    assert_eq!(f.command("resume").await.status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn release_next_ends_the_soak() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    assert_eq!(
        f.command("release-next").await.status,
        StatusCode::CONFLICT,
        "not healthy yet"
    );
    f.report(&["c1"], true).await;
    f.step().await;
    let r = f.command("release-next").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(f.released().await, ["c1", "c2", "c3"]);
}
