//! The dashboard's approval flow in headless Chromium against a real hub
//! process: one operator opens a gate with `spec.approval` (with a change
//! ticket) and gets a pending request, sees it under Approvals with Cancel but
//! no Approve; a second operator signs in, approves it, and the override is in
//! force. Screenshots go to target/test-output/dashboard/.

#[macro_use]
mod dashboard_support;

use dashboard_support::{ADMIN_TOKEN, Browser, Hub, seed_small};
use serde_json::json;

/// Signs out and in again as `token`.
async fn sign_in_as(b: &Browser, token: &str) {
    b.click("#signout").await;
    b.wait_page("signin").await;
    b.route("#/fleet").await;
    b.fill("#token", token).await;
    b.click("#signin-submit").await;
    b.wait_page("fleet").await;
}

browser_test!(two_operators_request_and_approve, |b| {
    let hub = Hub::start("approvals").await;
    seed_small(&hub).await;
    hub.gate(json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "payments"},
        "spec": {"clusters": {"selector": {"matchLabels": {"env": "prod"}}}, "default": "closed",
                 "approval": {"approvers": 1, "expires": "1h"}}
    }))
    .await;
    let alice = hub.token("alice", "operator").await;
    let bob = hub.token("bob", "operator").await;

    // Alice asks to open the gate: a pending request, no override.
    b.sign_in(&hub.base, &alice).await;
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
    for part in ["payments", "alice", "hotfix INC-42", "CHG0031337", "0 of 1"] {
        assert!(row.contains(part), "{row} lacks {part}");
    }
    // The requester may withdraw, not approve.
    let buttons = b
        .eval("[...document.querySelectorAll('#approvals-table button')].map((e) => e.dataset.action).join(',')")
        .await;
    assert_eq!(buttons, json!("reject,cancel"));
    b.screenshot("approvals-requester").await;

    // Bob approves: the override is in force, as Alice's.
    sign_in_as(&b, &bob).await;
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
    let overrides = hub
        .call(ADMIN_TOKEN, "GET", "/api/v1/overrides?gate=payments", None)
        .await;
    let o = &overrides["items"][0];
    assert_eq!(o["state"], "open", "{overrides}");
    assert_eq!(o["actor"], "alice");
    assert!(o["approvalRequest"].is_string(), "{overrides}");
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
});
