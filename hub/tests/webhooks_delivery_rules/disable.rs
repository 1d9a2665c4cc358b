//! An endpoint disabled by the hub: at once by a 410 Gone (everywhere, nothing more
//! sent until it is enabled again), or after failing for days, with its reason.

use super::*;

#[tokio::test]
async fn a_410_disables_the_endpoint_everywhere_and_nothing_more_is_sent() {
    let hub = Hub::new().await;
    let replica = Replica::new(hub.service.clone(), HttpOptions::default(), Grpc::opts())
        .with_notify(&notify_support::opts(), &EgressOptions::default())
        .unwrap();
    let served = Served::start(replica).await;
    let router = served.http.clone();
    // `gone` answers 410 once, then 204; `canary` always 204.
    let (gone_url, mut gone_rx) = receiver_answering(|n| {
        if n == 0 {
            (StatusCode::GONE, "this receiver was decommissioned").into_response()
        } else {
            StatusCode::NO_CONTENT.into_response()
        }
    })
    .await;
    let (canary_url, mut canary_rx) = receiver(0).await;
    subscribe(
        &router,
        common::ADMIN,
        json!({"name": "gone", "url": gone_url, "events": ["spoke.*"]}),
    )
    .await;
    // Together: both are routed to `gone` before its first answer disables it
    // (enqueued one after the other, the 410 could come in between, once in CI).
    enqueue_numbered_together(&hub, &[0, 1]).await; // the second queued behind the first

    let (_, first, _) = next(&mut gone_rx).await;
    assert_eq!(first["data"]["n"], 0);
    until("the endpoint disabled", || async {
        let (_, got) = call(&router, Method::GET, "/api/v1/webhooks/gone", None).await;
        got["spec"]["enabled"] == false
    })
    .await;

    // REST: disabled with the reason; the 410'd delivery failed, recorded.
    let (_, got) = call(&router, Method::GET, "/api/v1/webhooks/gone", None).await;
    assert_eq!(
        got["disabledReason"], "the endpoint answered 410 Gone",
        "{got}"
    );
    let (_, list) = call(
        &router,
        Method::GET,
        "/api/v1/webhooks/gone/deliveries",
        None,
    )
    .await;
    let states: Vec<(Value, Value)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["state"].clone(), d["attempts"].clone()))
        .collect();
    assert_eq!(
        states,
        vec![(json!("pending"), json!(0)), (json!("failed"), json!(1))],
        "newest first: the second never tried, the first failed once: {list}"
    );
    let gone_id = list[1]["id"].as_i64().unwrap();
    let (_, one) = call(
        &router,
        Method::GET,
        &format!("/api/v1/webhooks/gone/deliveries/{gone_id}"),
        None,
    )
    .await;
    assert_eq!(one["attemptLog"][0]["status"], 410, "{one}");
    assert_eq!(
        one["attemptLog"][0]["responseExcerpt"], "this receiver was decommissioned",
        "{one}"
    );
    assert_eq!(one["lastError"], "HTTP 410", "{one}");

    // gRPC: the same.
    let mut admin = served.grpc.admin();
    let got = within(
        "GetWebhook",
        admin.get_webhook(authed(
            pb::GetWebhookRequest {
                name: "gone".into(),
            },
            &hub.admin,
        )),
    )
    .await
    .unwrap()
    .into_inner();
    assert_eq!(got.spec.as_ref().unwrap().enabled, Some(false), "{got:?}");
    assert_eq!(got.disabled_reason, "the endpoint answered 410 Gone");

    // Audit: one entry by the hub, naming the reason.
    let audit = served
        .get_json("/api/v1/audit?targetKind=webhook&target=gone", &hub.admin)
        .await;
    let disables: Vec<&Value> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["action"] == "webhook.disable")
        .collect();
    assert_eq!(disables.len(), 1, "{audit}");
    assert_eq!(disables[0]["actor"], "fleetgate-hub");
    assert_eq!(disables[0]["reason"], "the endpoint answered 410 Gone");
    assert_eq!(disables[0]["after"]["enabled"], false);

    // The per-endpoint metrics.
    assert_eq!(attempts_metric(&router, "gone", "gone").await, 1.0);
    let gone = [("webhook", "gone"), ("reason", "gone")];
    assert_eq!(
        metric(&router, "fleetgate_hub_webhooks_disabled_total", &gone).await,
        1.0
    );

    // Nothing more is sent to it: a canary subscribed after the disable
    // gets a new event, so the worker has claimed since; `gone` got nothing,
    // neither its queued event nor a delivery of the new one.
    subscribe(
        &router,
        common::ADMIN,
        json!({"name": "canary", "url": canary_url, "events": ["spoke.*"]}),
    )
    .await;
    enqueue_numbered(&hub, 2).await;
    let (_, seen, _) = next(&mut canary_rx).await;
    assert_eq!(seen["data"]["n"], 2);
    nothing_more(&mut gone_rx, "a disabled endpoint");
    let (_, list) = call(
        &router,
        Method::GET,
        "/api/v1/webhooks/gone/deliveries",
        None,
    )
    .await;
    assert_eq!(
        list.as_array().unwrap().len(),
        2,
        "no delivery routed to a disabled endpoint: {list}"
    );

    // Disabled by a person over gRPC (already disabled: the hub's reason
    // stays), then enabled over REST: the reason and failure run are
    // cleared, the filters kept, and the queue goes on with the event that
    // waited; the 410'd one stays failed.
    let got = within(
        "SetWebhookEnabled",
        admin.set_webhook_enabled(authed(
            pb::SetWebhookEnabledRequest {
                name: "gone".into(),
                enabled: false,
            },
            &hub.admin,
        )),
    )
    .await
    .unwrap()
    .into_inner();
    assert_eq!(got.spec.as_ref().unwrap().enabled, Some(false));
    assert_eq!(got.disabled_reason, "the endpoint answered 410 Gone");
    let (status, body) = call(&router, Method::POST, "/api/v1/webhooks/gone/enable", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["spec"]["enabled"], true, "{body}");
    assert_eq!(body["spec"]["events"], json!(["spoke.*"]), "{body}");
    assert!(
        body["disabledReason"].is_null() && body["failingSince"].is_null(),
        "{body}"
    );
    let (_, resumed, _) = next(&mut gone_rx).await;
    assert_eq!(resumed["data"]["n"], 1);
    let audit = served
        .get_json("/api/v1/audit?targetKind=webhook&target=gone", &hub.admin)
        .await;
    let trail: Vec<(&str, &str)> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["action"].as_str().unwrap(), i["actor"].as_str().unwrap()))
        .collect();
    assert_eq!(
        trail[..3],
        [
            ("webhook.enable", "bootstrap-admin"),
            ("webhook.disable", "bootstrap-admin"),
            ("webhook.disable", "fleetgate-hub"),
        ],
        "{audit}"
    );
    // Viewers and operators may not.
    let (status, _) = notify_support::call_as(
        &router,
        &hub.operator,
        Method::POST,
        "/api/v1/webhooks/gone/disable",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    served.grpc.stop().await;
}

#[tokio::test]
async fn an_endpoint_failing_for_days_is_disabled_with_its_reason() {
    let hub = Hub::new().await;
    let (r, router) = replica_with(&hub, "r1", &opts_with("1h,1h,1h,1h,1h"));
    let h = chrono::Duration::hours;
    let (down_url, mut down_rx) =
        receiver_answering(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()).await;
    // `flaky` fails, recovers once, fails again: its failure run restarts.
    let (flaky_url, mut flaky_rx) = receiver_answering(|n| {
        if n == 1 {
            StatusCode::NO_CONTENT.into_response()
        } else {
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    })
    .await;
    subscribe(
        &router,
        common::ADMIN,
        json!({"name": "down", "url": down_url}),
    )
    .await;
    subscribe(
        &router,
        common::ADMIN,
        json!({"name": "flaky", "url": flaky_url}),
    )
    .await;
    enqueue_numbered(&hub, 0).await;

    // t0: both fail; their failure runs start.
    assert_eq!(tick(&hub, &r).await, 2);
    next(&mut down_rx).await;
    next(&mut flaky_rx).await;
    let (_, got) = call(&router, Method::GET, "/api/v1/webhooks/down", None).await;
    assert_eq!(instant(&got["failingSince"]), t0(), "{got}");

    // t0 + 119 h: `down` fails again (short of the 120 h default), `flaky`
    // is delivered, then fails its next event.
    hub.clock.set(t0() + h(119));
    assert_eq!(tick(&hub, &r).await, 2);
    next(&mut down_rx).await;
    next(&mut flaky_rx).await;
    enqueue_numbered(&hub, 1).await;
    assert_eq!(
        tick(&hub, &r).await,
        1,
        "flaky's next event; down's retry is not due"
    );
    next(&mut flaky_rx).await;
    for name in ["down", "flaky"] {
        let (_, got) = call(
            &router,
            Method::GET,
            &format!("/api/v1/webhooks/{name}"),
            None,
        )
        .await;
        assert_eq!(got["spec"]["enabled"], true, "{name}: {got}");
    }
    let (_, got) = call(&router, Method::GET, "/api/v1/webhooks/flaky", None).await;
    assert_eq!(instant(&got["failingSince"]), t0() + h(119), "{got}");

    // t0 + 121 h: `down` has failed for more than 120 h: disabled; `flaky`
    // for 2 h only.
    hub.clock.set(t0() + h(121));
    assert_eq!(tick(&hub, &r).await, 2);
    next(&mut down_rx).await;
    next(&mut flaky_rx).await;
    let (_, down) = call(&router, Method::GET, "/api/v1/webhooks/down", None).await;
    assert_eq!(down["spec"]["enabled"], false, "{down}");
    let reason = "every delivery attempt failed since 2026-11-25T12:00:00Z";
    assert_eq!(down["disabledReason"], reason, "{down}");
    let (_, flaky) = call(&router, Method::GET, "/api/v1/webhooks/flaky", None).await;
    assert_eq!(flaky["spec"]["enabled"], true, "{flaky}");
    let audit = hub
        .get("/api/v1/audit?targetKind=webhook&target=down")
        .await;
    let entry = &audit.body["items"][0];
    assert_eq!(entry["action"], "webhook.disable", "{}", audit.text);
    assert_eq!(entry["reason"], reason);
    assert_eq!(entry["actor"], "fleetgate-hub");
    assert_eq!(instant(&entry["at"]), t0() + h(121));
    let audit = hub
        .get("/api/v1/audit?targetKind=webhook&target=flaky")
        .await;
    assert!(
        !audit.text.contains("webhook.disable"),
        "flaky stays enabled: {}",
        audit.text
    );
    // The per-endpoint metric shows the failures.
    assert_eq!(attempts_metric(&router, "down", "retry").await, 3.0);
    assert_eq!(attempts_metric(&router, "flaky", "retry").await, 3.0);
    assert_eq!(attempts_metric(&router, "flaky", "delivered").await, 1.0);
    let disabled = |webhook| [("webhook", webhook), ("reason", "failing")];
    let name = "fleetgate_hub_webhooks_disabled_total";
    assert_eq!(metric(&router, name, &disabled("down")).await, 1.0);
    assert_eq!(metric(&router, name, &disabled("flaky")).await, 0.0);

    // Disabled: nothing more goes to it, however late.
    hub.clock.set(t0() + h(200));
    tick(&hub, &r).await;
    nothing_more(&mut down_rx, "a disabled endpoint");
}
