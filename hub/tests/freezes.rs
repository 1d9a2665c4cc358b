//! Fleet freezes (the emergency stop) through REST with an injected clock: a freeze
//! closes every gate above every override (a newer open override too), reaches the
//! snapshots once per cluster (also clusters without gates), expires by itself, ends by
//! unfreeze, is audited, refuses bad input naming the field and changes nothing then.
//! Scheduled notifications and the schedule preview see freezes like every view does; a
//! freeze and an unfreeze enqueue the gate edges they cause in their own transaction.

mod common;

use axum::http::StatusCode;
use chrono::Duration;
use common::{gate_state, prod_pair_gated};
use serde_json::json;

#[tokio::test]
async fn a_freeze_closes_above_a_newer_open_override_and_ends_by_unfreeze() {
    let hub = prod_pair_gated().await;
    // Opened for a hotfix; then the incident: freeze every cluster.
    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"for": "4h", "reason": "hotfix"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(gate_state(&hub, "a").await.0, "open");
    // Freezing is an admin's: an operator (who may open and close gates) is refused,
    // and nothing is frozen.
    let r = hub
        .post_json(
            "/api/v1/freezes",
            &hub.operator,
            json!({"reason": "INC-123", "for": "2h"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert_eq!(gate_state(&hub, "a").await.0, "open");
    let r = hub
        .post_json(
            "/api/v1/freezes",
            &hub.admin,
            json!({"reason": "INC-123", "for": "2h"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["actor"], "bootstrap-admin");
    assert_eq!(r.body["expiresAt"], "2026-11-25T14:00:00Z");
    assert!(
        r.body.get("clusters").is_none(),
        "every cluster: {}",
        r.text
    );

    let (state, reason) = gate_state(&hub, "a").await;
    assert_eq!(state, "closed");
    assert_eq!(
        reason,
        "fleet freeze by bootstrap-admin until 14:00 UTC: INC-123"
    );
    // A newer open override does not reopen a frozen cluster.
    hub.clock.advance(Duration::minutes(5));
    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"for": "1h", "reason": "please"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(gate_state(&hub, "b").await.0, "closed");

    // The snapshots carry the freeze once, also to c (no gate there: its spoke holds every
    // Kustomization/HelmRelease).
    for c in ["a", "b", "c"] {
        let s = hub.service.cluster_snapshot(c).await.unwrap();
        let freezes: Vec<_> = s.overrides.iter().filter(|o| o.is_freeze()).collect();
        assert_eq!(freezes.len(), 1, "{c}: {:?}", s.overrides);
        assert_eq!(freezes[0].reason, "INC-123");
    }
    // The fleet status names it (the CLI's banner).
    let r = hub.get("/api/v1/status/clusters").await;
    assert_eq!(r.body["freezes"][0]["reason"], "INC-123", "{}", r.text);

    // Unfreeze: a viewer or an operator may not; an admin ends it; the newest override
    // decides again.
    for who in [&hub.viewer, &hub.operator] {
        let r = hub
            .post_json("/api/v1/freezes/end", who, json!({"reason": "resolved"}))
            .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    }
    let r = hub
        .post_json(
            "/api/v1/freezes/end",
            &hub.admin,
            json!({"reason": "resolved"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body[0]["endedBy"], "bootstrap-admin");
    assert_eq!(r.body[0]["endReason"], "resolved");
    assert_eq!(gate_state(&hub, "a").await.0, "open");
    assert!(
        hub.get("/api/v1/freezes")
            .await
            .body
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        hub.get("/api/v1/freezes?all=true")
            .await
            .body
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Nothing left to end.
    let r = hub
        .post_json(
            "/api/v1/freezes/end",
            &hub.admin,
            json!({"reason": "again"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);

    // Audited, with the reasons.
    let r = hub.get("/api/v1/audit?limit=20").await;
    let actions: Vec<&str> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert!(actions.contains(&"freeze.start"), "{actions:?}");
    assert!(actions.contains(&"freeze.end"), "{actions:?}");
}

#[tokio::test]
async fn a_selected_freeze_expires_by_the_clock() {
    let hub = prod_pair_gated().await;
    hub.post_json(
        "/api/v1/gates/g/open",
        &hub.operator,
        json!({"reason": "open all day"}),
    )
    .await;
    let r = hub
        .post_json(
            "/api/v1/freezes",
            &hub.admin,
            json!({"reason": "INC-9", "for": "30m", "clusters": {"names": ["a"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(gate_state(&hub, "a").await.0, "closed");
    assert_eq!(gate_state(&hub, "b").await.0, "open", "b not selected");
    assert!(
        hub.service
            .cluster_snapshot("b")
            .await
            .unwrap()
            .overrides
            .iter()
            .all(|o| !o.is_freeze())
    );
    hub.clock.advance(Duration::minutes(30));
    assert_eq!(gate_state(&hub, "a").await.0, "open", "expired by itself");
    assert!(
        hub.get("/api/v1/freezes")
            .await
            .body
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn bad_freezes_name_the_field_and_change_nothing() {
    let hub = prod_pair_gated().await;
    let before = hub.fingerprint().await;
    for (body, field) in [
        (json!({"reason": ""}), "reason"),
        (json!({"reason": "x", "for": "soon"}), "for"),
        (json!({"reason": "x", "for": "-1h"}), "for"),
        (
            json!({"reason": "x", "until": "2020-01-01T00:00:00Z"}),
            "until",
        ),
        (
            json!({"reason": "x", "for": "1h", "until": "2030-01-01T00:00:00Z"}),
            "until",
        ),
        (json!({"reason": "x", "clusters": {}}), "clusters"),
        (
            json!({"reason": "x", "clusters": {"names": ["nope"]}}),
            "clusters.names[0]",
        ),
    ] {
        let r = hub
            .post_json("/api/v1/freezes", &hub.admin, body.clone())
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            r.text
        );
        assert_eq!(r.body["error"]["field"], field, "{body}: {}", r.text);
    }
    let r = hub
        .post_json("/api/v1/freezes", &hub.viewer, json!({"reason": "x"}))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = hub
        .post_json(
            "/api/v1/freezes/end",
            &hub.admin,
            json!({"reason": "x", "id": "nope"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert_eq!(r.body["error"]["field"], "id");
    assert_eq!(hub.fingerprint().await, before);
    // No gate may take the reserved name.
    let r = hub
        .post_json(
            "/api/v1/gates",
            &hub.admin,
            common::simple_gate("fleet-freeze", &["a"], "open"),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert_eq!(r.body["error"]["field"], "metadata.name");
}

/// `w` on a and b: closed, open 13:00–14:00 UTC daily.
const WINDOWED: &str = "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: w}\nspec:\n  \
    clusters: {names: [a, b]}\n  default: closed\n  timeZone: UTC\n  windows:\n    \
    - {name: lunch, kind: allow, schedule: \"0 13 * * *\", duration: 1h}\n";

/// The `gate.opened`/`gate.closed` events of gate `w` after its creation (which closed it):
/// (type, instant, clusters), in order.
async fn w_events(hub: &common::Hub) -> Vec<(String, String, Vec<String>)> {
    let rows: Vec<(String, chrono::DateTime<chrono::Utc>, Vec<String>)> = sqlx::query_as(
        "select type, occurred_at, clusters from notify_events where gate = 'w' \
         and type in ('gate.opened', 'gate.closed') and occurred_at > $1 order by occurred_at, id",
    )
    .bind(common::t0())
    .fetch_all(&hub.pool)
    .await
    .unwrap();
    rows.into_iter()
        .map(|(t, at, c)| (t, at.format("%H:%M").to_string(), c))
        .collect()
}

/// (state, the first two [(YYYY-MM-DDTHH:MM, state)]) of `w`'s schedule preview for `query` (`?cluster=…` or none).
async fn w_preview(hub: &common::Hub, query: &str) -> (String, Vec<(String, String)>) {
    let r = hub.get(&format!("/api/v1/gates/w/preview{query}")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let at = |t: &serde_json::Value| t["at"].as_str().unwrap()[..16].to_string();
    let transitions = r.body["transitions"].as_array().unwrap();
    (
        r.body["initial"]["state"].as_str().unwrap().to_string(),
        transitions
            .iter()
            .take(2)
            .map(|t| (at(t), t["state"].as_str().unwrap().to_string()))
            .collect(),
    )
}

#[tokio::test]
async fn scheduled_notifications_and_the_schedule_preview_see_freezes() {
    let hub = common::Hub::new().await;
    for c in ["a", "b"] {
        hub.register(c, json!({"env": "prod"})).await;
    }
    let r = hub.create_gate_yaml(WINDOWED).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    hub.service.notify_scan(&[]).await.unwrap(); // the first scan starts the schedule at t0
    hub.clock.advance(Duration::minutes(1));
    let r = hub
        .post_json(
            "/api/v1/freezes",
            &hub.admin,
            json!({"reason": "INC-9", "clusters": {"names": ["a"]}, "for": "3h"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);

    // The preview of frozen a stays closed through the window; b opens at 13:00. Without
    // a cluster: the overrides every cluster gets, and this freeze is not one.
    let (state, transitions) = w_preview(&hub, "?cluster=a").await;
    assert_eq!(state, "closed");
    assert_eq!(
        transitions[0],
        ("2026-11-26T13:00".into(), "open".into()),
        "the next day's window: {transitions:?}"
    );
    let r = hub.get("/api/v1/gates/w/preview?cluster=a").await;
    assert_eq!(
        r.body["initial"]["reason"], "fleet freeze by bootstrap-admin until 15:01 UTC: INC-9",
        "{}",
        r.text
    );
    // The impact preview of a new gate on a and b (a dry run) says the same.
    let r = hub
        .post_json(
            "/api/v1/gates?dryRun=true",
            &hub.admin,
            common::simple_gate("w2", &["a", "b"], "open"),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let states: Vec<(&str, &str)> = r.body["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["cluster"].as_str().unwrap(), c["state"].as_str().unwrap()))
        .collect();
    assert_eq!(states, [("a", "closed"), ("b", "open")], "{}", r.text);
    let b = w_preview(&hub, "?cluster=b").await;
    assert_eq!(b.1[0], ("2026-11-25T13:00".into(), "open".into()), "{b:?}");
    assert_eq!(w_preview(&hub, "").await.1, b.1);

    // The window opens: gate.opened for b only (a is frozen); nothing for the freeze's
    // start (w was closed anyway).
    hub.clock
        .set(common::t0() + Duration::hours(1) + Duration::seconds(1));
    hub.service.notify_scan(&[]).await.unwrap();
    assert_eq!(
        w_events(&hub).await,
        [("gate.opened".into(), "13:00".into(), vec!["b".to_string()])]
    );

    // Unfrozen inside the window: a opens then (an edge of the scan, by the freeze's end).
    hub.clock.set(common::t0() + Duration::minutes(70));
    let r = hub
        .post_json(
            "/api/v1/freezes/end",
            &hub.admin,
            json!({"reason": "fixed"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    hub.clock.advance(Duration::minutes(1));
    let out = hub.service.notify_scan(&[]).await.unwrap();
    assert_eq!(
        w_events(&hub).await[1..],
        [("gate.opened".into(), "13:10".into(), vec!["a".to_string()])]
    );
    assert_eq!(out.next_due, Some(common::t0() + Duration::hours(2)));
    // A freeze of every cluster, in the window: both close at its start.
    hub.clock.advance(Duration::minutes(1));
    let r = hub
        .post_json("/api/v1/freezes", &hub.admin, json!({"reason": "INC-10"}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    hub.clock.advance(Duration::minutes(1));
    hub.service.notify_scan(&[]).await.unwrap();
    assert_eq!(
        w_events(&hub).await[2..],
        [(
            "gate.closed".into(),
            "13:12".into(),
            vec!["a".to_string(), "b".to_string()]
        )]
    );
    let (state, transitions) = w_preview(&hub, "").await;
    assert_eq!(
        (state.as_str(), transitions.len()),
        ("closed", 0),
        "{transitions:?}"
    );
}

/// (type, clusters, cause, actor, reason) of gate `gate`'s edges, oldest first.
async fn edges_of(hub: &common::Hub, gate: &str) -> Vec<(String, Vec<String>, String, String)> {
    let rows: Vec<(String, Vec<String>, serde_json::Value)> = sqlx::query_as(
        "select type, clusters, data from notify_events where gate = $1 \
         and type in ('gate.opened', 'gate.closed') order by id",
    )
    .bind(gate)
    .fetch_all(&hub.pool)
    .await
    .unwrap();
    rows.into_iter()
        .map(|(t, c, d)| {
            let s = |k: &str| d[k].as_str().unwrap_or_default().to_string();
            (
                t,
                c,
                s("cause"),
                format!("{} / {}", s("actor"), s("reason")),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_freeze_at_the_instant_of_the_last_scan_still_announces_its_edges() {
    let hub = common::Hub::new().await;
    for c in ["a", "b"] {
        hub.register(c, json!({"env": "prod"})).await;
    }
    hub.simple_gate("g", &["a", "b"], "open").await;
    hub.simple_gate("shut", &["a"], "closed").await;
    let shut = edges_of(&hub, "shut").await; // its creation closed it
    hub.service.notify_scan(&[]).await.unwrap(); // the first scan starts the schedule at t0
    hub.clock.advance(Duration::minutes(1));
    hub.service.notify_scan(&[]).await.unwrap();
    // The freeze commits after a scan at its very instant: the next scans look only
    // after that instant, so its edges come from the freeze write itself.
    let r = hub
        .post_json(
            "/api/v1/freezes",
            &hub.admin,
            json!({"reason": "INC-7", "clusters": {"names": ["a"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let closed = (
        "gate.closed".to_string(),
        vec!["a".to_string()],
        "override".to_string(),
        "bootstrap-admin / fleet freeze by bootstrap-admin until unfrozen: INC-7".to_string(),
    );
    assert_eq!(edges_of(&hub, "g").await, std::slice::from_ref(&closed));
    assert_eq!(
        edges_of(&hub, "shut").await,
        shut,
        "shut was closed already"
    );
    hub.clock.advance(Duration::minutes(1));
    assert_eq!(hub.service.notify_scan(&[]).await.unwrap().inserted, 0);

    // Unfrozen at the instant of that scan: the unfreeze write announces the opening.
    let r = hub
        .post_json("/api/v1/freezes/end", &hub.admin, json!({"reason": "ok"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    hub.clock.advance(Duration::minutes(1));
    assert_eq!(hub.service.notify_scan(&[]).await.unwrap().inserted, 0);
    let edges = edges_of(&hub, "g").await;
    assert_eq!(edges.len(), 2, "{edges:?}");
    assert_eq!(edges[0], closed);
    assert_eq!(
        (edges[1].0.as_str(), &edges[1].1, edges[1].2.as_str()),
        ("gate.opened", &vec!["a".to_string()], "override")
    );
    assert!(edges[1].3.starts_with("bootstrap-admin / "), "{edges:?}");
    assert_eq!(edges_of(&hub, "shut").await, shut);
}
