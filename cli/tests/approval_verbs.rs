//! The real `fleetgate` binary against a real hub process: two operators through
//! the approval verbs (`gate open` answering `pending #id`, `override list
//! --pending|get|approve|reject|cancel`, break-glass `--emergency`), and
//! `admission-webhook apply|list|get|delete` with a real HTTP server standing in
//! for a change system that knows one ticket, deciding `gate open --ticket`.

mod common;

use axum::Json;
use axum::http::StatusCode;
use axum::routing::post;
use common::{Hub, err, out, start_hub, start_hub_with};
use fleetgate_api_types::admission::AdmissionRequest;
use serde_json::{Value, json};

/// Registers prod-eu-1 and applies gate `payments` (closed; opening needs one
/// approval); returns the secrets of operators alice and bob.
fn setup(hub: &Hub) -> (String, String) {
    hub.ok(&["cluster", "register", "prod-eu-1", "-L", "env=prod"]);
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("payments.yaml");
    std::fs::write(
        &gate,
        "apiVersion: fleetgate.io/v1
kind: Gate
metadata: {name: payments}
spec:
  clusters: {selector: {matchLabels: {env: prod}}}
  default: closed
  approval: {approvers: 1, expires: 1h}
",
    )
    .unwrap();
    hub.ok(&["gate", "apply", "-f", &gate.display().to_string()]);
    let token = |name: &str| {
        hub.json(&["token", "create", name, "--role", "operator"])["secret"]
            .as_str()
            .unwrap()
            .to_string()
    };
    (token("alice"), token("bob"))
}

/// Runs the CLI as `token`, asserts exit 0, returns stdout.
fn ok_as(hub: &Hub, token: &str, args: &[&str]) -> String {
    let o = hub.cli_as(token, args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", err(&o));
    out(&o)
}

/// `gate open payments` as `token`: the pending request's id, from the answer
/// `gate/payments open pending #<id> (…): fleetgate override approve <id>`.
fn request(hub: &Hub, token: &str, reason: &str) -> String {
    let said = ok_as(
        hub,
        token,
        &[
            "gate", "open", "payments", "--for", "1h", "--reason", reason,
        ],
    );
    let id = said
        .strip_prefix("gate/payments open pending #")
        .and_then(|s| s.split(' ').next())
        .unwrap_or_else(|| panic!("not a pending answer: {said}"))
        .to_string();
    assert!(
        said.contains("(needs 1 approval by ")
            && said.ends_with(&format!("fleetgate override approve {id}\n")),
        "{said}"
    );
    id
}

fn live_overrides(hub: &Hub) -> Value {
    hub.json(&["gate", "overrides", "payments"])
}

#[test]
fn two_operators_through_the_approval_verbs() {
    let hub = start_hub();
    let (alice, bob) = setup(&hub);

    // Alice asks; nothing is in force; the request is listed as pending.
    let id = request(&hub, &alice, "hotfix INC-42");
    assert_eq!(live_overrides(&hub), json!([]));
    let pending = hub.json(&["override", "list", "--pending"]);
    assert_eq!(pending.as_array().unwrap().len(), 1, "{pending}");
    assert_eq!(pending[0]["requester"], "alice");
    let table = hub.ok(&["override", "list", "--pending"]);
    assert!(
        table.contains(&id) && table.contains("0/1") && table.contains("hotfix INC-42"),
        "{table}"
    );

    // She may not approve her own request (exit 5, the hub's reason); Bob does.
    let o = hub.cli_as(&alice, &["override", "approve", &id]);
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    assert!(
        err(&o).contains("requested this override and cannot approve it"),
        "{}",
        err(&o)
    );
    assert_eq!(live_overrides(&hub), json!([]));
    let said = ok_as(
        &hub,
        &bob,
        &["override", "approve", &id, "--reason", "diff reviewed"],
    );
    let live = live_overrides(&hub);
    let oid = live[0]["id"].as_str().unwrap();
    assert_eq!(
        said,
        format!("request {id} approved: gate/payments opened (override {oid})\n")
    );
    assert_eq!(
        (&live[0]["state"], &live[0]["actor"]),
        (&json!("open"), &json!("alice"))
    );
    let detail = hub.ok(&["override", "get", &id]);
    assert!(
        detail.contains("  - bob at ")
            && detail.contains("decided:   approved by bob")
            && detail.contains(&format!("override:  {oid}")),
        "{detail}"
    );
    // A second approval of a decided request: conflict (exit 4).
    let o = hub.cli(&["override", "approve", &id]);
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));

    // Reject (reason required) and withdraw end requests without an override.
    let rejected = request(&hub, &alice, "another");
    let o = hub.cli_as(&bob, &["override", "reject", &rejected, "--reason", " "]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert_eq!(
        ok_as(
            &hub,
            &bob,
            &["override", "reject", &rejected, "--reason", "not now"]
        ),
        format!("request {rejected} rejected (gate/payments)\n")
    );
    let withdrawn = request(&hub, &alice, "third");
    let o = hub.cli_as(&bob, &["override", "cancel", &withdrawn]);
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    assert_eq!(
        ok_as(&hub, &alice, &["override", "cancel", &withdrawn]),
        format!("request {withdrawn} cancelled (gate/payments)\n")
    );
    let statuses: Vec<(String, String)> = hub
        .json(&["override", "list", "--gate", "payments"])
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            (withdrawn, "cancelled".to_string()),
            (rejected, "rejected".to_string()),
            (id, "approved".to_string()),
        ]
    );
    assert_eq!(live_overrides(&hub).as_array().unwrap().len(), 1);

    // Break-glass: an admin skips the approval (reason required); an operator may not.
    let args = [
        "gate",
        "open",
        "payments",
        "--for",
        "30m",
        "--reason",
        "prod down, INC-9",
        "--emergency",
    ];
    let o = hub.cli_as(&bob, &args);
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    let said = hub.ok(&args);
    assert!(said.contains("EMERGENCY: approval skipped"), "{said}");
    let audit = hub.json(&["audit", "--action", "override.open.emergency"]);
    assert_eq!(audit.as_array().unwrap().len(), 1, "{audit}");
}

/// The stand-in change system: POST /change allows CHG-1 only, with the
/// system's message otherwise.
fn change_system(rt: &tokio::runtime::Runtime) -> String {
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route(
        "/change",
        post(|Json(req): Json<AdmissionRequest>| async move {
            match req.ticket.as_deref() {
                Some("CHG-1") => (StatusCode::OK, Json(json!({"allowed": true}))),
                t => (
                    StatusCode::FORBIDDEN,
                    Json(json!({"message": format!("change {t:?} is not approved")})),
                ),
            }
        }),
    );
    rt.spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/change")
}

#[test]
fn admission_webhooks_configured_through_the_cli() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let url = change_system(&rt);
    // The change system is on loopback over plain http.
    let hub = start_hub_with(&[
        ("FLEETGATE_ADMISSION_ALLOW_PRIVATE", "true"),
        ("FLEETGATE_EGRESS_ALLOW_HTTP", "true"),
    ]);
    hub.ok(&["cluster", "register", "prod-eu-1", "-L", "env=prod"]);
    hub.ok(&["gate", "apply", "-f", &common::data("gates/two-gates.yaml")]);
    assert_eq!(
        hub.ok(&["admission-webhook", "list"]),
        "No admission webhooks.\n"
    );

    // Bad input names the field (exit 6); only an unscoped admin configures them.
    let o = hub.cli(&["admission-webhook", "apply", "cms", "--url", "ftp://x"]);
    assert_eq!(o.status.code(), Some(6), "{}", err(&o));
    assert!(err(&o).contains("url: "), "{}", err(&o));
    let operator = hub.json(&["token", "create", "op", "--role", "operator"])["secret"]
        .as_str()
        .unwrap()
        .to_string();
    let o = hub.cli_as(
        &operator,
        &["admission-webhook", "apply", "cms", "--url", &url],
    );
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));

    assert_eq!(
        hub.ok(&["admission-webhook", "apply", "cms", "--url", &url]),
        "admission-webhook/cms created\n"
    );
    let open = |ticket: &str| {
        hub.cli(&[
            "gate",
            "open",
            "sre-approval",
            "--for",
            "1h",
            "--reason",
            "deploy",
            "--ticket",
            ticket,
        ])
    };
    let o = open("CHG-9");
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    assert!(
        err(&o).contains("ticket: ") && err(&o).contains("change Some(\"CHG-9\") is not approved"),
        "{}",
        err(&o)
    );
    let o = open("CHG-1");
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));

    // Replaced with every option, read back, deleted.
    let dir = tempfile::tempdir().unwrap();
    fleetgate_tests::pki::make_pki(dir.path());
    let ca = dir.path().join("ca.crt");
    assert_eq!(
        hub.ok(&[
            "admission-webhook",
            "apply",
            "cms",
            "--url",
            &url,
            "--operation",
            "override",
            "--operation",
            "approval",
            "--call-timeout",
            "2s",
            "--failure-policy",
            "Ignore",
            "--ca-bundle",
            &ca.display().to_string(),
        ]),
        "admission-webhook/cms configured\n"
    );
    let got = hub.json(&["admission-webhook", "get", "cms"]);
    assert_eq!(got["operations"], json!(["override", "approval"]), "{got}");
    assert_eq!(
        (&got["timeout"], &got["failurePolicy"]),
        (&json!("2s"), &json!("Ignore"))
    );
    assert!(
        got["caBundle"]
            .as_str()
            .unwrap()
            .contains("BEGIN CERTIFICATE")
    );
    let table = hub.ok(&["admission-webhook", "list"]);
    assert!(
        table.contains("override,approval") && table.contains("Ignore") && table.contains(&url),
        "{table}"
    );
    let actions: Vec<String> = hub
        .json(&["audit", "--kind", "admission_webhook"])
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        actions,
        ["admission_webhook.replace", "admission_webhook.create"]
    );
    assert_eq!(
        hub.ok(&["admission-webhook", "delete", "cms"]),
        "admission-webhook/cms deleted\n"
    );
    let o = hub.cli(&["admission-webhook", "get", "cms"]);
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    // Nothing asks the change system any more.
    assert_eq!(open("CHG-9").status.code(), Some(0));
}
