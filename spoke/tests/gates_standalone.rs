//! A standalone spoke (no hub, no database, no token) takes its gates from the
//! Gate objects in its cluster, with the real kubectl against the simulator:
//! a window edge (reached by moving the spoke's manual clock, not by waiting)
//! opens the gate and `kubectl wait --for=condition=Opened` returns at it; an invalid edit is refused with Ready=False naming the field
//! and changes nothing, also across a spoke restart (the last valid version is
//! persisted); open/close requests by annotation (the RFC's
//! sre-approval and maintenance stories), an ignored request with its Warning;
//! Flagger's webhook payload answered 403 closed / 200 open.

mod support;

use chrono::{SecondsFormat, Utc};
use serde_json::{Value, json};
use support::*;

fn standalone() -> fleetgate_spoke::Config {
    let mut c = spoke_config(None);
    c.standalone = true;
    c.token = None;
    c
}

fn z(t: chrono::DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Flagger's exact webhook payload (CanaryWebhookPayload).
fn flagger_payload(phase: &str) -> Value {
    json!({
        "name": "podinfo",
        "namespace": "test",
        "phase": phase,
        "checksum": "6fb8c7d9c5",
        "metadata": {"gate": "sre-approval"}
    })
}

async fn flagger(spoke: &RunningSpoke, path: &str, phase: &str) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(format!("http://{}{path}", spoke.http_addr()))
        .json(&flagger_payload(phase))
        .send()
        .await
        .expect("spoke reachable");
    (
        resp.status().as_u16(),
        resp.json().await.unwrap_or_default(),
    )
}

#[tokio::test]
async fn window_edge_opens_the_gate_and_kubectl_wait_returns() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    // The spoke's clock is the test's: the window edge is reached by moving
    // it, not by waiting (kubectl, the API server and Flux run on real time).
    let t0 = chrono::SubsecRound::trunc_subsecs(Utc::now(), 0);
    let clock = fleetgate_spoke::clock::Clock::manual(t0);
    let mut config = standalone();
    config.clock = clock.clone();
    let spoke = RunningSpoke::start(&cluster, config).await;
    let k = Kubectl::new(&cluster);

    // Closed by default, an allow window starting in an hour (UTC).
    let start = t0 + chrono::Duration::hours(1);
    let end = start + chrono::Duration::hours(1);
    let fmt = |t: chrono::DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%S").to_string();
    k.apply(&format!(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: release}}\nspec:\n  clusters: {{selector: {{}}}}\n  targets: {{kinds: [Kustomization]}}\n  default: closed\n  windows: [{{name: release-window, kind: allow, start: '{}', end: '{}'}}]\n",
        fmt(start),
        fmt(end)
    ))
    .await;
    let gate = wait_gate(&cluster.client, "release", "closed by default", |o| {
        opened(o) == Some(("False".into(), "Default".into()))
    })
    .await;
    assert!(
        gate.data["status"]["nextTransition"].is_string(),
        "{:?}",
        gate.data
    );
    assert_eq!(condition(&gate, "Ready", "status"), Some("True"));
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "suspended by the Gate object",
        suspended,
    )
    .await;
    wait_gate(&cluster.client, "release", "governs apps", |o| {
        o.data["status"]["governed"] == 1
    })
    .await;

    let mut wait = k
        .command(&[
            "wait",
            "--for=condition=Opened",
            "gate/release",
            "--timeout=30s",
        ])
        .spawn()
        .expect("kubectl wait runs");
    // A minute before the edge: still closed, kubectl still waiting.
    clock.set(start - chrono::Duration::minutes(1));
    wait_gate(&cluster.client, "release", "closed a minute before", |o| {
        opened(o).is_some_and(|(s, _)| s == "False")
    })
    .await;
    assert!(
        wait.try_wait().expect("kubectl wait").is_none(),
        "kubectl wait returned before the window edge"
    );
    clock.set(start);
    let out = tokio::time::timeout(WAIT, wait.wait_with_output())
        .await
        .expect("kubectl wait returns")
        .expect("kubectl wait output");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let gate = wait_gate(&cluster.client, "release", "open", |o| {
        opened(o).is_some_and(|(s, _)| s == "True")
    })
    .await;
    assert_eq!(opened(&gate).unwrap().1, "AllowWindow");
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "resumed at the edge",
        |o| !suspended(o),
    )
    .await;
    wait_gate_event(
        &cluster.client,
        "GateOpened",
        "release",
        "allow window 'release-window'",
    )
    .await;
    let described = k.ok(&["describe", "gate", "release"]).await;
    assert!(described.contains("GateOpened"), "{described}");
    let table = k.ok(&["get", "gates"]).await;
    assert!(
        table.contains("release") && table.contains("AllowWindow"),
        "{table}"
    );
    spoke.stop().await;
}

#[tokio::test]
async fn an_invalid_edit_names_the_field_and_changes_nothing() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    let spoke = RunningSpoke::start(&cluster, standalone()).await;
    let k = Kubectl::new(&cluster);
    let gate = |schedule: &str| {
        format!(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: freeze}}\nspec:\n  clusters: {{names: [{CLUSTER}]}}\n  targets: {{kinds: [Kustomization]}}\n  windows: [{{name: always, kind: deny, schedule: '{schedule}', duration: 168h}}]\n"
        )
    };
    k.apply(&gate("* * * * *")).await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "frozen",
        suspended,
    )
    .await;

    k.apply(&gate("61 * * * *")).await;
    let g = wait_gate(&cluster.client, "freeze", "Ready=False", |o| {
        condition(o, "Ready", "status") == Some("False")
    })
    .await;
    let message = condition(&g, "Ready", "message").unwrap_or_default();
    assert!(message.starts_with("spec.windows[0].schedule"), "{message}");
    assert!(
        message.contains("the last valid version stays in force"),
        "{message}"
    );
    assert_eq!(condition(&g, "Stalled", "status"), Some("True"));
    let e = wait_gate_event(
        &cluster.client,
        "InvalidSpec",
        "freeze",
        "spec.windows[0].schedule",
    )
    .await;
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(opened(&g).map(|o| o.0), Some("False".into()));
    let ks = api(&cluster.client, "Kustomization")
        .get("apps")
        .await
        .unwrap();
    assert!(suspended(&ks), "an invalid edit changes nothing");

    // The last valid version was persisted: a restarted spoke keeps it in
    // force (without it, the invalid object would enforce nothing and the
    // Kustomization would be resumed).
    let before = spoke.ctx().revision();
    spoke.stop().await;
    let spoke = RunningSpoke::start(&cluster, standalone()).await;
    spoke
        .report_where("the last valid version enforced after a restart", |r| {
            r.revision > before
                && r.objects
                    .iter()
                    .any(|o| o.key.name == "apps" && o.suspended_by == ["freeze"])
        })
        .await;
    let g = wait_gate(
        &cluster.client,
        "freeze",
        "Ready=False after the restart",
        |o| condition(o, "Ready", "status") == Some("False"),
    )
    .await;
    assert!(
        condition(&g, "Ready", "message")
            .unwrap_or_default()
            .contains("the last valid version stays in force")
    );

    // A Gate for another cluster is valid but not enforced here.
    k.apply("apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: elsewhere}\nspec:\n  clusters: {names: [other]}\n  default: closed\n").await;
    let g = wait_gate(&cluster.client, "elsewhere", "skipped", |o| {
        condition(o, "Ready", "reason") == Some("OtherCluster")
    })
    .await;
    // Nothing of it is in force here: Opened is Unknown with the reason (kubectl's columns).
    assert_eq!(opened(&g), Some(("Unknown".into(), "OtherCluster".into())));

    // A Gate without spec.clusters means this cluster, as the CRD says (not InvalidSpec).
    k.apply(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: here}\nspec:\n  default: open\n",
    )
    .await;
    wait_gate(&cluster.client, "here", "enforced", |o| {
        condition(o, "Ready", "reason") == Some("Enforced")
    })
    .await;

    // Deleting the frozen gate's object resumes what it held.
    k.ok(&["delete", "gate", "freeze"]).await;
    wait_for(&cluster.client, "Kustomization", "apps", "resumed", |o| {
        !suspended(o)
    })
    .await;
    spoke.stop().await;
}

#[tokio::test]
async fn requests_by_annotation_and_flagger_follow_the_gate() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("payments", "repo", false)).await;
    let spoke = RunningSpoke::start(&cluster, standalone()).await;
    let k = Kubectl::new(&cluster);
    let story = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/in-cluster/sre-approval.yaml"
    );
    let yaml = std::fs::read_to_string(story).expect("example");
    k.apply(&yaml).await;
    wait_gate(&cluster.client, "sre-approval", "closed", |o| {
        opened(o) == Some(("False".into(), "Default".into()))
    })
    .await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "payments",
        "held",
        suspended,
    )
    .await;

    // Flagger's confirm-rollout hook: closed → 403 with the reason.
    let (code, body) = flagger(&spoke, "/flagger/gates/sre-approval", "Progressing").await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (403, Some("default (closed)")),
        "{body}"
    );
    let (code, _) = flagger(&spoke, "/flagger/gate", "Promoting").await;
    assert_eq!(code, 403);
    let (code, _) = flagger(&spoke, "/flagger/gates/nope", "Progressing").await;
    assert_eq!(code, 404);

    // A request from the future is ignored with a Warning, nothing changes.
    let future =
        (Utc::now() + chrono::Duration::hours(1)).to_rfc3339_opts(SecondsFormat::Secs, true);
    k.ok(&[
        "annotate",
        "--overwrite",
        "gate/sre-approval",
        &format!("open.gate.fleetgate.io/requestedAt={future}"),
    ])
    .await;
    let e = wait_gate_event(
        &cluster.client,
        "RequestIgnored",
        "sre-approval",
        "in the future",
    )
    .await;
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    let g = gates(&cluster.client).get("sre-approval").await.unwrap();
    assert_eq!(opened(&g).unwrap().0, "False");

    // Open for the gate's window (1h) by annotation.
    let open_at = Utc::now();
    k.ok(&[
        "annotate",
        "--overwrite",
        "--field-manager=alice",
        "gate/sre-approval",
        &format!("open.gate.fleetgate.io/requestedAt={}", z(open_at)),
        "open.gate.fleetgate.io/reason=CHG-1234",
    ])
    .await;
    let g = wait_gate(&cluster.client, "sre-approval", "opened by request", |o| {
        opened(o) == Some(("True".into(), "OpenRequested".into()))
    })
    .await;
    let request = &g.data["status"]["openRequest"];
    assert_eq!(
        (request["accepted"].as_bool(), request["reason"].as_str()),
        (Some(true), Some("CHG-1234"))
    );
    assert_eq!(request["requestedBy"], "alice");
    let message = condition(&g, "Opened", "message").unwrap_or_default();
    assert!(
        message.starts_with("override open by alice until"),
        "{message}"
    );
    wait_for(
        &cluster.client,
        "Kustomization",
        "payments",
        "resumed",
        |o| !suspended(o),
    )
    .await;
    let (code, body) = flagger(&spoke, "/flagger/gates/sre-approval", "Confirming").await;
    assert_eq!((code, body["open"].as_bool()), (200, Some(true)), "{body}");

    // Close ahead of time: the newest request wins (stamped 2 s after the open
    // one, within the clock skew a request may be ahead of the spoke).
    let close_at = open_at + chrono::Duration::seconds(2);
    k.ok(&[
        "annotate",
        "--overwrite",
        "gate/sre-approval",
        &format!("close.gate.fleetgate.io/requestedAt={}", z(close_at)),
    ])
    .await;
    wait_gate(&cluster.client, "sre-approval", "closed by request", |o| {
        opened(o) == Some(("False".into(), "CloseRequested".into()))
    })
    .await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "payments",
        "held again",
        suspended,
    )
    .await;
    let (code, _) = flagger(&spoke, "/flagger/gates/sre-approval", "Confirming").await;
    assert_eq!(code, 403);
    let metrics = spoke.ctx().metrics.render();
    for line in [
        r#"fleetgate_spoke_gate_requests_total{action="open",accepted="true"} 1"#,
        r#"fleetgate_spoke_gate_requests_total{action="open",accepted="false"} 1"#,
        r#"fleetgate_spoke_gate_requests_total{action="close",accepted="true"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} not in {metrics}");
    }
    spoke.stop().await;
}

/// The RFC's maintenance story as committed in examples/in-cluster: open by
/// default, a close request holds everything for the gate's 24 h window.
#[tokio::test]
async fn maintenance_story_a_close_request_holds_for_the_24h_window() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    let spoke = RunningSpoke::start(&cluster, standalone()).await;
    let k = Kubectl::new(&cluster);
    let story = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/in-cluster/maintenance.yaml"
    );
    k.apply(&std::fs::read_to_string(story).expect("example"))
        .await;
    wait_gate(&cluster.client, "maintenance", "open by default", |o| {
        opened(o) == Some(("True".into(), "Default".into()))
    })
    .await;

    let at = z(Utc::now());
    k.ok(&[
        "annotate",
        "--overwrite",
        "--field-manager=sre-oncall",
        "gate/maintenance",
        &format!("close.gate.fleetgate.io/requestedAt={at}"),
        "close.gate.fleetgate.io/reason=storage migration",
    ])
    .await;
    let g = wait_gate(&cluster.client, "maintenance", "closed by request", |o| {
        opened(o) == Some(("False".into(), "CloseRequested".into()))
    })
    .await;
    let until =
        z(chrono::DateTime::parse_from_rfc3339(&at).unwrap().to_utc()
            + chrono::Duration::hours(24));
    assert_eq!(
        g.data["status"]["closeRequest"]["expiresAt"],
        until.as_str()
    );
    assert_eq!(
        g.data["status"]["closeRequest"]["requestedBy"],
        "sre-oncall"
    );
    assert_eq!(
        g.data["status"]["nextTransition"],
        until.as_str(),
        "it opens again when the window ends"
    );
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "held for the maintenance",
        suspended,
    )
    .await;
    spoke.stop().await;
}
