//! What a subscription receives, through real local HTTP receivers: a
//! `perCluster` subscription gets one message per cluster for a window edge
//! on many clusters (the default one message for all), and the Slack and
//! Microsoft Teams formats are messages of the shapes those services accept
//! (checked against their documented formats below), readable by a person —
//! gate, clusters, reason, next change — with a link to the dashboard.

mod common;
mod notify_support;

use std::collections::BTreeSet;

use axum::Router;
use axum::http::{HeaderMap, Method, StatusCode};
use common::{Hub, t0};
use fleetgate_hub::config::{GrpcOptions, HttpOptions};
use fleetgate_hub::egress::EgressOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_hub::{AppState, app};
use notify_support::{Received, call, next, receiver, run_notifier, verify};
use serde_json::{Value, json};

const PUBLIC_URL: &str = "https://fleetgate.example.com";

/// A replica with the test notification settings and `--public-url`.
fn replica(hub: &Hub) -> (Replica, Router) {
    let opts = fleetgate_hub::notify::NotifyOptions {
        public_url: Some(PUBLIC_URL.into()),
        ..notify_support::opts()
    };
    let grpc = GrpcOptions {
        replica_id: Some("r1".into()),
        ..GrpcOptions::default()
    };
    let r = Replica::new(hub.service.clone(), HttpOptions::default(), grpc)
        .with_notify(&opts, &EgressOptions::default())
        .unwrap();
    let router = app(AppState::from_replica(r.clone()));
    (r, router)
}

/// Gate `name` on the prod clusters: closed by a deny window from t0+2h to t0+5h.
fn freeze_gate(name: &str) -> String {
    let start = (t0() + chrono::Duration::hours(2)).format("%Y-%m-%dT%H:%M:%S");
    let end = (t0() + chrono::Duration::hours(5)).format("%Y-%m-%dT%H:%M:%S");
    format!(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: {name}}}\nspec:\n  clusters: {{selector: {{matchLabels: {{env: prod}}}}}}\n  \
         timeZone: UTC\n  windows:\n    - {{name: freeze, kind: deny, start: \"{start}\", end: \"{end}\"}}\n"
    )
}

/// Creates subscription `body` through `router`; its secret.
async fn subscribe(router: &Router, body: Value) -> String {
    notify_support::subscribe(router, common::ADMIN, body).await
}

/// Scans at t0 (the scheduler's start), then at the edge t0+2h: one gate.closed.
async fn close_at_the_edge(hub: &Hub) {
    let r = hub.create_gate_yaml(&freeze_gate("xmas")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    hub.service.notify_scan(&[]).await.unwrap();
    hub.clock.set(t0() + chrono::Duration::hours(2));
    let out = hub.service.notify_scan(&[]).await.unwrap();
    assert_eq!(out.inserted, 1, "one gate.closed for every cluster");
}

/// The deliveries of subscription `name`: (event type, state, message id).
async fn deliveries(router: &Router, name: &str) -> Vec<(String, String, String)> {
    let (status, list) = call(
        router,
        Method::GET,
        &format!("/api/v1/webhooks/{name}/deliveries"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    list.as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let s = |k: &str| d[k].as_str().unwrap_or_default().to_string();
            (s("eventType"), s("state"), s("messageId"))
        })
        .collect()
}

/// Waits (10 s at most) until every delivery of `name` is delivered; returns them.
async fn all_delivered(router: &Router, name: &str, n: usize) -> Vec<(String, String, String)> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let d = deliveries(router, name).await;
        if d.len() == n && d.iter().all(|x| x.1 == "delivered") {
            return d;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name}: {n} deliveries delivered within 10 s, have {d:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The next `n` messages of a receiver, signatures verified with `secret`.
async fn take(rx: &mut Received, secret: &str, n: usize) -> Vec<(HeaderMap, Value)> {
    let mut out = Vec::new();
    for _ in 0..n {
        let (h, v, raw) = next(rx).await;
        verify(secret, &h, &raw);
        out.push((h, v));
    }
    out
}

#[tokio::test]
async fn per_cluster_subscriptions_get_one_message_per_cluster() {
    let hub = Hub::new().await;
    let prod = ["p1", "p2", "p3", "p4", "p5"];
    for c in prod {
        let region = if c < "p3" { "eu" } else { "us" };
        hub.register(c, json!({"env": "prod", "region": region}))
            .await;
    }
    hub.register("d1", json!({"env": "dev"})).await;
    let (r, router) = replica(&hub);
    let (all_url, mut all_rx) = receiver(0).await;
    let (each_url, mut each_rx) = receiver(0).await;
    let (eu_url, mut eu_rx) = receiver(0).await;
    let all = subscribe(
        &router,
        json!({"name": "all", "url": all_url, "events": ["gate.closed"]}),
    )
    .await;
    let each = subscribe(
        &router,
        json!({"name": "each", "url": each_url, "events": ["gate.closed"], "perCluster": true}),
    )
    .await;
    let eu = subscribe(
        &router,
        json!({"name": "eu", "url": eu_url, "events": ["gate.closed"], "perCluster": true,
               "format": "cloudevents",
               "clusters": {"selector": {"matchLabels": {"region": "eu"}}}}),
    )
    .await;
    let (_, got) = call(&router, Method::GET, "/api/v1/webhooks/each", None).await;
    assert_eq!(got["spec"]["perCluster"], true, "{got}");

    close_at_the_edge(&hub).await;
    let _notifier = run_notifier(&r, &hub);

    // The default: one message naming the five clusters.
    let one = take(&mut all_rx, &all, 1).await;
    assert_eq!(one[0].1["type"], "gate.closed");
    assert_eq!(one[0].1["data"]["clusters"], json!(prod));
    let sequence = one[0].1["sequence"].clone();

    // Per cluster: five messages of the same event, one cluster each, each
    // with its own webhook-id (the receiver deduplicates per message).
    let five = take(&mut each_rx, &each, 5).await;
    let mut ids = BTreeSet::new();
    let mut seen = Vec::new();
    for (h, v) in &five {
        assert_eq!(v["type"], "gate.closed", "{v}");
        assert_eq!(v["sequence"], sequence, "one event: {v}");
        assert_eq!(v["data"]["gate"], "xmas");
        assert_eq!(v["data"]["cause"], "window");
        let clusters = v["data"]["clusters"].as_array().unwrap();
        assert_eq!(clusters.len(), 1, "{v}");
        seen.push(clusters[0].as_str().unwrap().to_string());
        assert_eq!(h["webhook-id"].to_str().unwrap(), v["id"].as_str().unwrap());
        ids.insert(v["id"].as_str().unwrap().to_string());
    }
    seen.sort();
    assert_eq!(seen, prod, "one message per cluster, none for d1");
    assert_eq!(ids.len(), 5, "distinct webhook-ids: {ids:?}");

    // Per cluster within a cluster filter: only the matching clusters, in
    // the subscription's format.
    let two = take(&mut eu_rx, &eu, 2).await;
    let mut eu_seen: Vec<&str> = two
        .iter()
        .map(|(h, v)| {
            assert_eq!(h["content-type"], "application/cloudevents+json");
            assert_eq!(v["type"], "io.fleetgate.gate.closed");
            v["data"]["clusters"][0].as_str().unwrap()
        })
        .collect();
    eu_seen.sort();
    assert_eq!(eu_seen, ["p1", "p2"]);

    // Recorded: one delivery for the default, one per cluster for the others,
    // all delivered; and nothing more arrives.
    assert_eq!(all_delivered(&router, "all", 1).await.len(), 1);
    let recorded = all_delivered(&router, "each", 5).await;
    let recorded: BTreeSet<String> = recorded.into_iter().map(|d| d.2).collect();
    assert_eq!(recorded, ids, "the recorded message ids are those received");
    all_delivered(&router, "eu", 2).await;
    assert!(all_rx.try_recv().is_err() && each_rx.try_recv().is_err());
    assert!(eu_rx.try_recv().is_err());
}

/// Slack mrkdwn text (`*bold*`, `<url|label>` links): every `<` opens a link
/// to an https URL and every `&` is one of the three escapes
/// (<https://api.slack.com/reference/surfaces/formatting#escaping>).
fn check_slack_mrkdwn(text: &str) {
    let mut rest = text;
    while let Some(i) = rest.find('<') {
        let link = &rest[i..];
        let end = link
            .find('>')
            .unwrap_or_else(|| panic!("unclosed <: {text}"));
        assert!(
            link[1..end].starts_with("https://") && link[1..end].contains('|'),
            "only <https://…|label> links: {text}"
        );
        rest = &link[end + 1..];
    }
    assert!(!rest.contains('>'), "raw > in {text}");
    for (i, _) in text.match_indices('&') {
        let t = &text[i..];
        assert!(
            t.starts_with("&amp;") || t.starts_with("&lt;") || t.starts_with("&gt;"),
            "raw & in {text}"
        );
    }
}

/// A text object of Block Kit (<https://api.slack.com/reference/block-kit/composition-objects#text>).
fn check_slack_text(t: &Value, max: usize) {
    let keys: BTreeSet<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
    assert!(
        keys.is_subset(&BTreeSet::from(["type", "text", "emoji", "verbatim"])),
        "{t}"
    );
    assert!(t["type"] == "mrkdwn" || t["type"] == "plain_text", "{t}");
    let text = t["text"].as_str().unwrap();
    assert!((1..=max).contains(&text.chars().count()), "{t}");
    if t["type"] == "mrkdwn" {
        check_slack_mrkdwn(text);
    }
}

/// A Slack incoming-webhook message as documented
/// (<https://api.slack.com/messaging/webhooks>, Block Kit section and context
/// blocks: <https://api.slack.com/reference/block-kit/blocks>): `text` and at
/// most 50 `blocks`; a section has a text (≤ 3,000) and/or at most 10 fields
/// (≤ 2,000 each); a context at most 10 elements; no other keys.
fn check_slack(v: &Value) {
    let keys: BTreeSet<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, BTreeSet::from(["text", "blocks"]), "{v}");
    check_slack_mrkdwn(v["text"].as_str().unwrap());
    let blocks = v["blocks"].as_array().unwrap();
    assert!((1..=50).contains(&blocks.len()));
    for b in blocks {
        let keys: BTreeSet<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
        match b["type"].as_str().unwrap() {
            "section" => {
                assert!(
                    keys.is_subset(&BTreeSet::from(["type", "text", "fields", "block_id"])),
                    "{b}"
                );
                assert!(keys.contains("text") || keys.contains("fields"), "{b}");
                if let Some(t) = b.get("text") {
                    check_slack_text(t, 3000);
                }
                if let Some(f) = b.get("fields") {
                    let f = f.as_array().unwrap();
                    assert!((1..=10).contains(&f.len()), "{b}");
                    f.iter().for_each(|t| check_slack_text(t, 2000));
                }
            }
            "context" => {
                assert_eq!(keys, BTreeSet::from(["type", "elements"]), "{b}");
                let e = b["elements"].as_array().unwrap();
                assert!((1..=10).contains(&e.len()), "{b}");
                e.iter().for_each(|t| check_slack_text(t, 3000));
            }
            other => panic!("unexpected block type {other}: {b}"),
        }
    }
}

/// A Teams incoming-webhook message with an Adaptive Card as documented
/// (<https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using#send-adaptive-cards-using-an-incoming-webhook>):
/// `type` must be `message`; `attachments` holds cards whose `contentType` is
/// `application/vnd.microsoft.card.adaptive` (`contentUrl` null) and whose
/// `content` is the card (<https://adaptivecards.io/explorer/>): type
/// `AdaptiveCard`, a version Teams renders (≤ 1.5), `TextBlock` (text
/// required), `FactSet` (facts of title and value), `Action.OpenUrl` (url
/// required; the webhook supports no `Action.Submit`). The facts, by title.
fn check_teams(v: &Value) -> Vec<(String, String)> {
    let keys: BTreeSet<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, BTreeSet::from(["type", "attachments"]), "{v}");
    assert_eq!(v["type"], "message");
    let att = v["attachments"].as_array().unwrap();
    assert_eq!(att.len(), 1, "{v}");
    assert_eq!(
        att[0]["contentType"],
        "application/vnd.microsoft.card.adaptive"
    );
    assert!(att[0]["contentUrl"].is_null());
    let card = &att[0]["content"];
    assert_eq!(card["type"], "AdaptiveCard", "{card}");
    assert_eq!(
        card["$schema"],
        "http://adaptivecards.io/schemas/adaptive-card.json"
    );
    let version = card["version"].as_str().unwrap();
    assert!(
        ["1.0", "1.1", "1.2", "1.3", "1.4", "1.5"].contains(&version),
        "{version}"
    );
    let mut facts = Vec::new();
    for el in card["body"].as_array().unwrap() {
        match el["type"].as_str().unwrap() {
            "TextBlock" => assert!(!el["text"].as_str().unwrap().is_empty(), "{el}"),
            "FactSet" => {
                for f in el["facts"].as_array().unwrap() {
                    let s = |k: &str| f[k].as_str().unwrap_or_else(|| panic!("{f}")).to_string();
                    facts.push((s("title"), s("value")));
                }
            }
            other => panic!("unexpected element {other}: {el}"),
        }
    }
    for a in card["actions"].as_array().into_iter().flatten() {
        assert_eq!(a["type"], "Action.OpenUrl", "{a}");
        assert!(a["url"].as_str().unwrap().starts_with("https://"), "{a}");
        assert!(!a["title"].as_str().unwrap().is_empty());
    }
    facts
}

/// The `*Label*\nvalue` fields of a Slack message, as (label, value).
fn slack_fields(v: &Value) -> Vec<(String, String)> {
    v["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["fields"].as_array().cloned().unwrap_or_default())
        .map(|f| {
            let t = f["text"].as_str().unwrap();
            let (label, value) = t.split_once('\n').unwrap();
            (label.trim_matches('*').to_string(), value.to_string())
        })
        .collect()
}

fn fact<'a>(facts: &'a [(String, String)], label: &str) -> &'a str {
    facts
        .iter()
        .find(|f| f.0 == label)
        .map(|f| f.1.as_str())
        .unwrap_or_else(|| panic!("no {label} in {facts:?}"))
}

#[tokio::test]
async fn slack_and_teams_messages_are_readable_and_link_to_the_dashboard() {
    let hub = Hub::new().await;
    for c in ["a", "b"] {
        hub.register(c, json!({"env": "prod"})).await;
    }
    let (r, router) = replica(&hub);
    let (slack_url, mut slack_rx) = receiver(0).await;
    let (teams_url, mut teams_rx) = receiver(0).await;
    let slack = subscribe(
        &router,
        json!({"name": "chat", "url": slack_url, "format": "slack",
               "events": ["gate.*", "override.created"]}),
    )
    .await;
    let teams = subscribe(
        &router,
        json!({"name": "channel", "url": teams_url, "format": "teams",
               "events": ["gate.*", "override.created"]}),
    )
    .await;
    close_at_the_edge(&hub).await;
    let _notifier = run_notifier(&r, &hub);
    let gate_link = format!("{PUBLIC_URL}/#/gates/xmas");

    // The window edge.
    let (h, s) = take(&mut slack_rx, &slack, 1).await.remove(0);
    assert_eq!(h["content-type"], "application/json");
    check_slack(&s);
    assert_eq!(s["text"], "Gate xmas closed on 2 clusters", "{s}");
    assert_eq!(
        s["blocks"][0]["text"]["text"],
        "*Gate xmas closed on 2 clusters*"
    );
    let f = slack_fields(&s);
    assert_eq!(fact(&f, "Gate"), "xmas");
    assert_eq!(fact(&f, "Clusters"), "a, b");
    assert!(
        fact(&f, "Reason").starts_with("deny window 'freeze' until"),
        "{f:?}"
    );
    assert_eq!(fact(&f, "Cause"), "window edge");
    assert_eq!(fact(&f, "At"), "2026-11-25 14:00 UTC");
    assert_eq!(fact(&f, "Next change"), "2026-11-25 17:00 UTC");
    assert!(
        s.to_string()
            .contains(&format!("<{gate_link}|Open in fleetgate>")),
        "{s}"
    );

    let (h, t) = take(&mut teams_rx, &teams, 1).await.remove(0);
    assert_eq!(h["content-type"], "application/json");
    let facts = check_teams(&t);
    let card = &t["attachments"][0]["content"];
    assert_eq!(card["body"][0]["text"], "Gate xmas closed on 2 clusters");
    assert_eq!(fact(&facts, "Clusters"), "a, b");
    assert_eq!(fact(&facts, "Next change"), "2026-11-25 17:00 UTC");
    assert_eq!(card["actions"][0]["url"], gate_link);

    // An override whose reason holds Slack markup: escaped in Slack (no
    // `@channel` ping), as typed in Teams.
    let r = hub
        .post_json(
            "/api/v1/gates/xmas/open",
            &hub.operator,
            json!({"for": "30m", "reason": "<!channel> fix & retry", "clusters": {"names": ["a"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let got = take(&mut slack_rx, &slack, 2).await;
    let by_type = |t: &str| {
        got.iter()
            .map(|(_, v)| v)
            .find(|v| v["text"].as_str().unwrap().starts_with(t))
            .unwrap_or_else(|| panic!("a message starting {t}: {got:?}"))
    };
    let created = by_type("Override: gate xmas opened on cluster a by ops");
    check_slack(created);
    let f = slack_fields(created);
    assert_eq!(fact(&f, "Reason"), "&lt;!channel&gt; fix &amp; retry");
    assert_eq!(fact(&f, "Until"), "2026-11-25 14:30 UTC");
    let opened = by_type("Gate xmas opened on cluster a");
    check_slack(opened);
    let f = slack_fields(opened);
    assert_eq!(fact(&f, "Cause"), "override by ops");
    assert_eq!(
        fact(&f, "Reason"),
        "override open by ops until 14:30 UTC: &lt;!channel&gt; fix &amp; retry"
    );

    let got = take(&mut teams_rx, &teams, 2).await;
    for (_, v) in &got {
        let facts = check_teams(v);
        assert!(
            facts.iter().any(|f| f.1.contains("<!channel> fix & retry")),
            "{facts:?}"
        );
    }
    all_delivered(&router, "chat", 3).await;
    all_delivered(&router, "channel", 3).await;

    // `fleetgate webhook test` sends the same shapes at once.
    for (name, rx, secret) in [
        ("chat", &mut slack_rx, &slack),
        ("channel", &mut teams_rx, &teams),
    ] {
        let (status, res) = call(
            &router,
            Method::POST,
            &format!("/api/v1/webhooks/{name}/test"),
            Some(json!({})),
        )
        .await;
        assert_eq!(
            (status, &res["ok"]),
            (StatusCode::OK, &json!(true)),
            "{res}"
        );
        let (_, v) = take(rx, secret, 1).await.remove(0);
        if name == "chat" {
            check_slack(&v);
            assert!(
                v["text"]
                    .as_str()
                    .unwrap()
                    .starts_with("fleetgate test message")
            );
        } else {
            check_teams(&v);
        }
    }
}
