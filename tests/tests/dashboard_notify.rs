//! The dashboard's notification and calendar views in headless Chromium
//! against a real hub process: a gate's calendar feed status with the stale
//! warning, and the admins' webhooks page (subscriptions, deliveries, each
//! delivery's attempts, redeliver, disable and enable). Screenshots go to target/test-output/dashboard/.

#[macro_use]
mod dashboard_support;

use dashboard_support::{ADMIN_TOKEN, Hub, seed_small};
use serde_json::json;

browser_test!(
    gate_page_shows_calendar_feed_status_and_stale_warning,
    |b| {
        let hub = Hub::start("calendar").await;
        seed_small(&hub).await;
        // The hub refuses loopback feeds without --calendar-allow-private: the
        // first fetch fails, the feed was never fetched, so it is stale.
        hub.gate(json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "cab"},
            "spec": {"clusters": {"selector": {"matchLabels": {"env": "prod"}}}, "default": "open",
                     "windows": [{"name": "freeze", "kind": "deny",
                                  "calendar": {"url": "https://127.0.0.1:9/cab.ics"}}]}
        }))
        .await;
        let failed = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            loop {
                let g = hub
                    .call(ADMIN_TOKEN, "GET", "/api/v1/gates/cab", None)
                    .await;
                if g["calendars"][0]["stale"] == json!(true) {
                    return g;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        })
        .await
        .expect("the first fetch of the feed fails within 30 s");
        let error = failed["calendars"][0]["error"]
            .as_str()
            .unwrap()
            .to_string();
        b.sign_in(&hub.base, ADMIN_TOKEN).await;
        b.route("#/gates/cab").await;
        b.wait_page("gate").await;
        b.wait_js(
            "document.querySelector('#calendar-stale')?.textContent.includes('window freeze')",
            "stale warning",
        )
        .await;
        let row = b
            .eval("document.querySelector('#calendar-feeds tr[data-feed=\"freeze\"]').textContent")
            .await;
        let row = row.as_str().unwrap();
        assert!(row.contains("https://127.0.0.1:9/cab.ics"), "{row}");
        assert!(row.contains("stale"), "{row}");
        assert!(row.contains(&error), "{row} lacks {error}");
        b.screenshot("gate-calendar-stale").await;
    }
);

browser_test!(
    admin_webhooks_page_lists_deliveries_attempts_and_redelivers,
    |b| {
        let hub = Hub::start("webhooks").await;
        seed_small(&hub).await;
        // A receiver that answers 405: the hub's own /livez takes no POST.
        let url = format!("{}/livez", hub.base);
        hub.call(
            ADMIN_TOKEN,
            "POST",
            "/api/v1/webhooks",
            Some(json!({"name": "ops", "url": url, "events": ["override.*"]})),
        )
        .await;
        hub.call(
            ADMIN_TOKEN,
            "POST",
            "/api/v1/gates/sre-approval/open",
            Some(json!({"for": "1h", "reason": "CHG-7 hook"})),
        )
        .await;
        let delivery = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            loop {
                let d = hub
                    .call(ADMIN_TOKEN, "GET", "/api/v1/webhooks/ops/deliveries", None)
                    .await;
                if d[0]["attempts"].as_i64().unwrap_or(0) >= 1 {
                    return d[0].clone();
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        })
        .await
        .expect("a first attempt within 30 s");
        let id = delivery["id"].as_i64().unwrap();

        b.sign_in(&hub.base, ADMIN_TOKEN).await;
        b.wait_js(
            "!document.getElementById('nav-webhooks').hidden",
            "Webhooks in the admin's navigation",
        )
        .await;
        b.route("#/webhooks").await;
        b.wait_page("webhooks").await;
        let row = b
            .eval("document.querySelector('#webhooks-table tr[data-webhook=\"ops\"]').textContent")
            .await;
        assert!(row.as_str().unwrap().contains("override.*"), "{row}");
        b.click("#webhooks-table tr[data-webhook='ops'] button.deliveries")
            .await;
        b.wait_js(
        &format!("document.querySelector('#deliveries-table tr[data-delivery=\"{id}\"]')?.textContent.includes('override.created')"),
        "the delivery listed",
    )
    .await;
        b.click(&format!(
            "#deliveries-table tr[data-delivery='{id}'] button.attempts"
        ))
        .await;
        b.wait_js(
            "document.querySelector('#attempts-table')?.textContent.includes('404')",
            "the attempt's HTTP status",
        )
        .await;
        b.screenshot("webhooks").await;
        b.click(&format!(
            "#deliveries-table tr[data-delivery='{id}'] button.redeliver"
        ))
        .await;
        // The page says so once the hub answered (and re-lists the deliveries).
        b.wait_js(
            &format!("document.getElementById('toasts').textContent.includes('Delivery {id} queued again')"),
            "the redelivery acknowledged",
        )
        .await;
        // ...and the list was drawn again (the attempts shown before are gone).
        b.wait_js(
            "!document.querySelector('#attempts-table') && !!document.querySelector('#deliveries-table')",
            "deliveries listed again",
        )
        .await;
        let a = hub
            .call(
                ADMIN_TOKEN,
                "GET",
                "/api/v1/audit?action=webhook.redeliver",
                None,
            )
            .await;
        assert_eq!(a["items"].as_array().map(Vec::len), Some(1), "{a}");

        // Disable, then enable: only the flag changes, each audited.
        b.click("#webhooks-table tr[data-webhook='ops'] button.disable")
            .await;
        b.wait_js(
            "document.querySelector('#webhooks-table tr[data-webhook=\"ops\"]')?.textContent.includes('disabled') && !!document.querySelector('#webhooks-table tr[data-webhook=\"ops\"] button.enable')",
            "the subscription shown disabled",
        )
        .await;
        b.click("#webhooks-table tr[data-webhook='ops'] button.enable")
            .await;
        b.wait_js(
            "!!document.querySelector('#webhooks-table tr[data-webhook=\"ops\"] button.disable')",
            "the subscription shown enabled",
        )
        .await;
        let w = hub
            .call(ADMIN_TOKEN, "GET", "/api/v1/webhooks/ops", None)
            .await;
        assert_eq!(w["spec"]["enabled"], true, "{w}");
        assert_eq!(w["spec"]["events"], json!(["override.*"]), "{w}");
        for action in ["webhook.disable", "webhook.enable"] {
            let a = hub
                .call(
                    ADMIN_TOKEN,
                    "GET",
                    &format!("/api/v1/audit?action={action}"),
                    None,
                )
                .await;
            assert_eq!(
                a["items"].as_array().map(Vec::len),
                Some(1),
                "{action}: {a}"
            );
        }
    }
);
