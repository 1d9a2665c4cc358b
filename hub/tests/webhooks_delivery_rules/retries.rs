//! When a failed delivery is tried again: never before `Retry-After`, 3xx counted as a
//! failure with no redirect followed, and the schedule's end (failed, the queue moves on,
//! redelivery keeps the `webhook-id`).

use super::*;

#[tokio::test]
async fn retry_after_in_seconds_and_as_a_date_is_never_retried_before() {
    let hub = Hub::new().await;
    let (r, router) = replica_with(&hub, "r1", &opts_with("1m,1m,1m,1m,1m"));
    // Each answer asks for a wait: 120 s; an HTTP date 300 s ahead (of the
    // wall clock, the receiver's); 1 s (shorter than the schedule's 1 m);
    // ten days (capped at one). Then 204.
    let date = Utc::now() + chrono::Duration::seconds(300);
    let http_date = date.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    let (url, rx) = receiver_answering(move |n| match n {
        0 => with_header(StatusCode::SERVICE_UNAVAILABLE, "retry-after", "120".into()),
        1 => with_header(
            StatusCode::TOO_MANY_REQUESTS,
            "retry-after",
            http_date.clone(),
        ),
        2 => with_header(StatusCode::SERVICE_UNAVAILABLE, "retry-after", "1".into()),
        3 => with_header(
            StatusCode::SERVICE_UNAVAILABLE,
            "retry-after",
            "864000".into(),
        ),
        _ => StatusCode::NO_CONTENT.into_response(),
    })
    .await;
    let secret = subscribe(&router, common::ADMIN, json!({"name": "slow", "url": url})).await;
    enqueue_numbered(&hub, 0).await;

    let mut slow = Slow {
        hub: &hub,
        r: &r,
        router: &router,
        rx,
        secret,
        id: None,
    };
    let s = chrono::Duration::seconds;
    slow.fails_then_waits(s(120), s(120), "Retry-After: 120")
        .await;
    // The date was taken before the attempt: 300 s less the time since.
    slow.fails_then_waits(s(240), s(300), "Retry-After: <HTTP date>")
        .await;
    // A shorter Retry-After does not bring the schedule's wait forward (1 m ±20 %).
    slow.fails_then_waits(s(48), s(72), "Retry-After: 1").await;
    slow.fails_then_waits(
        s(24 * 3600),
        s(24 * 3600),
        "Retry-After: ten days (a day at most)",
    )
    .await;
    assert_eq!(tick(&hub, &r).await, 1);
    let (_, v, _) = next(&mut slow.rx).await;
    assert_eq!(v["data"]["n"], 0);
    let d = newest(&router, "slow").await;
    assert_eq!(d["state"], "delivered", "{d}");
    let statuses: Vec<Value> = d["attemptLog"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].clone())
        .collect();
    assert_eq!(
        statuses,
        vec![json!(503), json!(429), json!(503), json!(503), json!(204)]
    );
    assert_eq!(attempts_metric(&router, "slow", "retry").await, 4.0);
    assert_eq!(attempts_metric(&router, "slow", "delivered").await, 1.0);
}

/// One delivery retried by the `retry_after_…` test.
struct Slow<'a> {
    hub: &'a Hub,
    r: &'a Replica,
    router: &'a Router,
    rx: Received,
    secret: String,
    /// Its `webhook-id`, the same on every attempt.
    id: Option<String>,
}

impl Slow<'_> {
    /// An attempt now that fails: sent (signed, same id), recorded at the
    /// hub's clock, the next one scheduled `min..=max` later; not claimable
    /// a second before that, and the clock then moves to it.
    async fn fails_then_waits(
        &mut self,
        min: chrono::Duration,
        max: chrono::Duration,
        label: &str,
    ) {
        let now = self.hub.clock.now();
        assert_eq!(
            tick(self.hub, self.r).await,
            1,
            "{label}: the delivery is due"
        );
        let (h, _, raw) = next(&mut self.rx).await;
        verify(&self.secret, &h, &raw);
        let msg = h["webhook-id"].to_str().unwrap().to_string();
        assert_eq!(
            self.id.get_or_insert(msg.clone()),
            &msg,
            "retries keep the id"
        );
        let d = newest(self.router, "slow").await;
        assert_eq!(d["state"], "pending", "{label}: {d}");
        let last = d["attemptLog"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(
            instant(&last["at"]),
            now,
            "{label}: attempt at the hub's clock"
        );
        let next_at = instant(&d["nextAttemptAt"]);
        let wait = next_at - now;
        assert!(
            wait >= min && wait <= max,
            "{label}: next attempt {wait} after this one, expected {min}..={max}: {d}"
        );
        self.hub.clock.set(next_at - chrono::Duration::seconds(1));
        assert_eq!(tick(self.hub, self.r).await, 0, "{label}: not before it");
        nothing_more(&mut self.rx, label);
        self.hub.clock.set(next_at);
    }
}

#[tokio::test]
async fn a_3xx_is_a_failure_and_no_redirect_is_followed() {
    let hub = Hub::new().await;
    let (r, router) = replica_with(&hub, "r1", &opts_with("1m,1m,1m"));
    // Where the redirects point: must never be contacted.
    let (target_url, mut target_rx) = receiver(0).await;
    let port = target_url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let cross_host = format!("http://localhost:{port}/hook");
    let (url, mut rx) = receiver_answering(move |n| match n {
        // Same origin: following it would reach this receiver again at once.
        0 => with_header(
            StatusCode::TEMPORARY_REDIRECT,
            "location",
            "/hook?moved".into(),
        ),
        // Another host.
        1 => with_header(StatusCode::FOUND, "location", cross_host.clone()),
        2 => with_header(
            StatusCode::PERMANENT_REDIRECT,
            "location",
            target_url.clone(),
        ),
        _ => StatusCode::NO_CONTENT.into_response(),
    })
    .await;
    subscribe(&router, common::ADMIN, json!({"name": "moved", "url": url})).await;
    enqueue_numbered(&hub, 0).await;

    for (status, label) in [
        (307, "same origin"),
        (302, "another host"),
        (308, "another port"),
    ] {
        assert_eq!(tick(&hub, &r).await, 1, "{label}");
        next(&mut rx).await;
        nothing_more(&mut rx, &format!("{label}: one request per attempt"));
        nothing_more(&mut target_rx, &format!("{label}: the redirect target"));
        let d = newest(&router, "moved").await;
        assert_eq!(d["state"], "pending", "{label}: a failure, retried: {d}");
        assert_eq!(d["lastStatus"], status, "{label}: {d}");
        assert_eq!(d["lastError"], format!("HTTP {status}"), "{label}: {d}");
        hub.clock.set(instant(&d["nextAttemptAt"]));
    }
    assert_eq!(tick(&hub, &r).await, 1);
    next(&mut rx).await;
    assert_eq!(newest(&router, "moved").await["state"], "delivered");
    nothing_more(&mut target_rx, "the redirect target");
    assert_eq!(attempts_metric(&router, "moved", "retry").await, 3.0);
}

#[tokio::test]
async fn after_the_last_retry_the_delivery_fails_the_queue_moves_on_and_redeliver_sends_it() {
    // The default is the Standard Webhooks schedule.
    let standard = deliver::parse_schedule(deliver::DEFAULT_SCHEDULE).unwrap();
    let secs: Vec<u64> = standard.iter().map(Duration::as_secs).collect();
    assert_eq!(secs, [5, 300, 1800, 7200, 18_000, 36_000, 36_000]);

    let hub = Hub::new().await;
    let (r, router) = replica_with(&hub, "r1", &opts_with("1m,1m"));
    let (url, mut rx) = receiver(3).await; // three 503s, then 204
    subscribe(&router, common::ADMIN, json!({"name": "ops", "url": url})).await;
    enqueue_numbered(&hub, 0).await;
    enqueue_numbered(&hub, 1).await;

    // Three attempts of the first event (the first and two retries), the
    // second waiting behind it.
    let mut first_id = String::new();
    for attempt in 1..=3 {
        assert_eq!(tick(&hub, &r).await, 1, "attempt {attempt}");
        let (h, v, _) = next(&mut rx).await;
        assert_eq!(v["data"]["n"], 0, "attempt {attempt}: in order");
        first_id = h["webhook-id"].to_str().unwrap().to_string();
        let (_, list) = call(
            &router,
            Method::GET,
            "/api/v1/webhooks/ops/deliveries",
            None,
        )
        .await;
        let first = &list[1];
        if attempt < 3 {
            assert_eq!(first["state"], "pending", "{list}");
            hub.clock.set(instant(&first["nextAttemptAt"]));
        } else {
            assert_eq!(
                first["state"], "failed",
                "no retry after the schedule's last: {list}"
            );
            assert_eq!(first["attempts"], 3);
        }
    }
    assert_eq!(attempts_metric(&router, "ops", "retry").await, 2.0);
    assert_eq!(attempts_metric(&router, "ops", "failed").await, 1.0);

    // The queue moves on to the second event; the failed one is not tried again.
    assert_eq!(tick(&hub, &r).await, 1);
    let (_, v, _) = next(&mut rx).await;
    assert_eq!(v["data"]["n"], 1);
    hub.clock.set(t0() + chrono::Duration::days(3));
    assert_eq!(tick(&hub, &r).await, 0);
    nothing_more(&mut rx, "a failed delivery");

    // Redelivered on demand: due at once, the same webhook-id.
    let (_, list) = call(
        &router,
        Method::GET,
        "/api/v1/webhooks/ops/deliveries",
        None,
    )
    .await;
    let id = list[1]["id"].as_i64().unwrap();
    let (status, body) = call(
        &router,
        Method::POST,
        &format!("/api/v1/webhooks/ops/deliveries/{id}/redeliver"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(tick(&hub, &r).await, 1);
    let (h, v, _) = next(&mut rx).await;
    assert_eq!(v["data"]["n"], 0);
    assert_eq!(h["webhook-id"].to_str().unwrap(), first_id);
    let (_, one) = call(
        &router,
        Method::GET,
        &format!("/api/v1/webhooks/ops/deliveries/{id}"),
        None,
    )
    .await;
    assert_eq!(one["state"], "delivered", "{one}");
    assert_eq!(one["attempts"], 4, "{one}");
}
