//! The dashboard's two-person approval in headless Chromium against a real
//! hub process, both people signed in through the real OpenID provider (npm
//! `oidc-provider`, its own login form): Bob (group `sre`) opens a gate whose
//! `spec.approval` takes approvers from `sre`, with a change ticket, and gets a
//! pending request; under Approvals he has no Approve button and an approve
//! forged from his session is refused. Erin (also `sre`) signs in, approves,
//! and the override is in force; the audit names both people. And an admin
//! configures admission webhooks on the Webhooks page (a bad field named,
//! create, edit, delete, audited). Screenshots go to target/test-output/dashboard/.

#[macro_use]
mod dashboard_support;

use dashboard_support::{ADMIN_TOKEN, Browser, Hub, ME, seed_small};
use fleetgate_tests::oidc::OidcProvider;
use serde_json::{Value, json};

/// POSTs `body` to `path` from the page with the session cookie and its CSRF
/// token, as the dashboard's own calls do; returns the HTTP status and the
/// answer's `message`.
async fn post_from_page(b: &Browser, path: &str, body: Value) -> (Value, Value) {
    let script = format!(
        "const done = arguments[arguments.length - 1];
         (async () => {{
           const me = await fetch('/api/v1/whoami', {{credentials: 'same-origin'}}).then((r) => r.json());
           const r = await fetch({path:?}, {{method: 'POST', credentials: 'same-origin',
             headers: {{'Content-Type': 'application/json', 'X-CSRF-Token': me.csrfToken}},
             body: JSON.stringify({body})}});
           return [r.status, (await r.json()).error?.message];
         }})().then(done, (e) => done(String(e)));"
    );
    let answer = b.eval_async(&format!("fetch {path}"), &script).await;
    // Chromium logs the refusal the test provokes; take it out of the console.
    b.expect_console(&[&format!("{path} - ")], true).await;
    (answer[0].clone(), answer[1].clone())
}

/// The audit entries of `action`, newest first: (actor, actor kind).
async fn audit(hub: &Hub, action: &str) -> Vec<(String, String)> {
    let v = hub
        .call(
            ADMIN_TOKEN,
            "GET",
            &format!("/api/v1/audit?action={action}"),
            None,
        )
        .await;
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["actor"].as_str().unwrap_or_default().to_string(),
                e["actorKind"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

browser_test!(two_people_request_and_approve, |b| {
    let idp = OidcProvider::start().await;
    let dir = tempfile::tempdir().unwrap();
    let hub = Hub::start_with_sign_in("approvals", &idp, dir.path(), &[], "").await;
    seed_small(&hub).await;
    hub.gate(json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "payments"},
        "spec": {"clusters": {"selector": {"matchLabels": {"env": "prod"}}}, "default": "closed",
                 "approval": {"approvers": 1, "from": {"groups": ["sre"]}, "expires": "1h"}}
    }))
    .await;

    // Bob asks to open the gate: a pending request, no override.
    b.sign_in_with_provider(&hub.base, "bob").await;
    b.wait_eq(ME, "Bob Operator").await;
    b.route("#/gates/payments").await;
    b.wait_page("gate").await;
    b.click("#open-gate").await;
    b.fill("#dlg-reason", "hotfix INC-42").await;
    b.fill("#dlg-ticket", "CHG0031337").await;
    b.click("#dlg-confirm").await;
    b.wait_js(
        "document.getElementById('toasts').textContent.includes('waits for 1 approval')",
        "the pending request acknowledged",
    )
    .await;
    let overrides = hub
        .call(ADMIN_TOKEN, "GET", "/api/v1/overrides?gate=payments", None)
        .await;
    assert_eq!(overrides["items"], json!([]), "{overrides}");
    let pending = hub
        .call(ADMIN_TOKEN, "GET", "/api/v1/approvals?status=pending", None)
        .await;
    let request = &pending["items"][0];
    assert_eq!(request["requester"], "bob@example.com", "{pending}");
    let id = request["id"].as_str().unwrap().to_string();
    b.wait_js(
        "document.getElementById('nav-approvals-count').textContent === '1'",
        "one pending approval in the navigation",
    )
    .await;
    b.route("#/approvals").await;
    b.wait_page("approvals").await;
    let row = b
        .eval("document.querySelector('#approvals-table tbody tr').textContent")
        .await;
    let row = row.as_str().unwrap();
    for part in [
        "payments",
        "bob@example.com",
        "hotfix INC-42",
        "CHG0031337",
        "0 of 1",
    ] {
        assert!(row.contains(part), "{row} lacks {part}");
    }
    // The requester may reject or withdraw, not approve: no button, and an approve forged
    // from his session (cookie and CSRF token) is refused as his own request.
    let buttons = b
        .eval("[...document.querySelectorAll('#approvals-table button')].map((e) => e.dataset.action).join(',')")
        .await;
    assert_eq!(buttons, json!("reject,cancel"));
    b.screenshot("approvals-requester").await;
    let (status, message) = post_from_page(
        &b,
        &format!("/api/v1/approvals/{id}/approve"),
        json!({"reason": "me, myself"}),
    )
    .await;
    assert_eq!(status, json!(403), "{message}");
    assert_eq!(
        message,
        "person 'bob@example.com' requested this override and cannot approve it: \
         approval needs another person"
    );
    let still = hub
        .call(ADMIN_TOKEN, "GET", &format!("/api/v1/approvals/{id}"), None)
        .await;
    assert_eq!(still["status"], "pending", "{still}");
    assert_eq!(still["approvals"], json!([]), "{still}");

    // Erin signs in (a new provider session: the cookies of both go) and approves.
    b.click("#signout").await;
    b.wait_page("signin").await;
    dashboard_support::step("deleting cookies", b.client.delete_all_cookies()).await;
    b.sign_in_with_provider(&hub.base, "erin").await;
    b.wait_eq(ME, "Erin Operator").await;
    b.route("#/approvals").await;
    b.wait_page("approvals").await;
    b.click("#approvals-table button[data-action='approve']")
        .await;
    b.fill("#dlg-reason", "diff reviewed").await;
    b.click("#dlg-confirm").await;
    b.wait_js(
        "document.getElementById('toasts').textContent.includes('Approved: gate payments opened')",
        "the approval acknowledged",
    )
    .await;
    b.wait_js(
        "document.querySelector('#decided-approvals')?.textContent.includes('approved')",
        "the request listed as decided",
    )
    .await;
    b.screenshot("approvals-approved").await;

    // The override is Bob's, in force on both prod clusters.
    let overrides = hub
        .call(ADMIN_TOKEN, "GET", "/api/v1/overrides?gate=payments", None)
        .await;
    let o = &overrides["items"][0];
    assert_eq!(o["state"], "open", "{overrides}");
    assert_eq!(o["actor"], "bob@example.com");
    assert_eq!(o["approvalRequest"], json!(id), "{overrides}");
    let page = hub
        .call(ADMIN_TOKEN, "GET", "/api/v1/dashboard/gates/payments", None)
        .await;
    let states: Vec<&str> = page["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["open", "open"], "{page}");
    let done = hub
        .call(ADMIN_TOKEN, "GET", &format!("/api/v1/approvals/{id}"), None)
        .await;
    assert_eq!(done["status"], "approved", "{done}");
    assert_eq!(done["decidedBy"], "erin@example.com", "{done}");

    // The audit names both people.
    let person = |who: &str| vec![(who.to_string(), "person".to_string())];
    assert_eq!(
        audit(&hub, "approval.request").await,
        person("bob@example.com")
    );
    assert_eq!(
        audit(&hub, "approval.approve").await,
        person("erin@example.com")
    );
});

browser_test!(admins_configure_admission_webhooks, |b| {
    let hub = Hub::start("admission").await;
    b.sign_in(&hub.base, ADMIN_TOKEN).await;
    b.route("#/webhooks").await;
    b.wait_page("webhooks").await;
    b.wait_js(
        "document.querySelector('#admission-webhooks')?.textContent.includes('No admission webhooks')",
        "the empty admission section",
    )
    .await;

    // A bad URL: the form names the field, nothing is stored.
    b.fill("#adm-name", "cms").await;
    b.fill("#adm-url", "ftp://change.example.com/check").await;
    b.click("#adm-save").await;
    b.wait_js(
        "document.getElementById('adm-error').textContent.startsWith('url: ')",
        "the refusal naming url",
    )
    .await;
    b.expect_console(&["/api/v1/admission-webhooks/cms - "], true)
        .await;
    let none = hub
        .call(ADMIN_TOKEN, "GET", "/api/v1/admission-webhooks", None)
        .await;
    assert_eq!(none, json!([]));

    // Created with both operations, a 2s timeout and Ignore.
    b.fill("#adm-url", "https://change.example.com/check").await;
    b.click("#adm-op-approval").await;
    b.fill("#adm-timeout", "2s").await;
    b.eval("(document.getElementById('adm-policy').value = 'Ignore', true)")
        .await;
    b.click("#adm-save").await;
    b.wait_js(
        "document.querySelector('#admission-table tr[data-admission=\"cms\"]')",
        "the new admission webhook listed",
    )
    .await;
    let row = b
        .eval("document.querySelector('#admission-table tr[data-admission=\"cms\"]').textContent")
        .await;
    let row = row.as_str().unwrap();
    for part in [
        "https://change.example.com/check",
        "override, approval",
        "2s",
        "Ignore",
    ] {
        assert!(row.contains(part), "{row} lacks {part}");
    }
    let hook = hub
        .call(ADMIN_TOKEN, "GET", "/api/v1/admission-webhooks/cms", None)
        .await;
    assert_eq!(
        hook["operations"],
        json!(["override", "approval"]),
        "{hook}"
    );
    assert_eq!(hook["failurePolicy"], "Ignore", "{hook}");
    b.screenshot("admission-webhooks").await;

    // Edit fills the form; the new timeout replaces the old.
    b.click("#admission-table tr[data-admission='cms'] button.edit")
        .await;
    assert_eq!(
        b.eval("document.getElementById('adm-timeout').value").await,
        json!("2s")
    );
    b.fill("#adm-timeout", "3s").await;
    b.click("#adm-save").await;
    b.wait_js(
        "document.querySelector('#admission-table tr[data-admission=\"cms\"]')?.textContent.includes('3s')",
        "the replaced timeout listed",
    )
    .await;

    // Delete… asks, then removes it.
    b.click("#admission-table tr[data-admission='cms'] button.delete")
        .await;
    b.click("#dlg-confirm").await;
    b.wait_js(
        "document.querySelector('#admission-webhooks').textContent.includes('No admission webhooks')",
        "the webhook gone",
    )
    .await;
    let audit = hub
        .call(
            ADMIN_TOKEN,
            "GET",
            "/api/v1/audit?targetKind=admission_webhook",
            None,
        )
        .await;
    let actions: Vec<&str> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "admission_webhook.delete",
            "admission_webhook.replace",
            "admission_webhook.create"
        ]
    );
});
