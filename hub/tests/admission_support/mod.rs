//! What the admission webhook tests (`admission`, `admission_budget`) share: a hub whose
//! admission calls may reach the loopback test server over plain http, configuring a
//! webhook over REST, opening gate `g` with a ticket, and reading what was left behind.

#![allow(dead_code)]

use fleetgate_hub::ServiceDefaults;
use serde_json::{Value, json};

use crate::common::{self, Hub};

/// A hub whose admission calls may reach loopback over plain http (the test server).
pub async fn hub() -> Hub {
    let hub = common::prod_pair_gated().await;
    let policy = fleetgate_hub::egress::EgressPolicy::default()
        .allow_private(true)
        .allow_http(true);
    let service = hub.service.clone().with_admission_egress(policy);
    let app = fleetgate_hub::app(common::state(&service));
    Hub {
        app,
        service,
        ..hub
    }
}

/// `PUT /api/v1/admission-webhooks/{name}` with `url` and the `extra` spec fields.
pub async fn webhook(hub: &Hub, name: &str, url: String, extra: Value) -> common::Resp {
    let mut spec = json!({"url": url});
    spec.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    hub.call(
        axum::http::Method::PUT,
        &format!("/api/v1/admission-webhooks/{name}"),
        Some(&hub.admin),
        Some(("application/json", spec.to_string())),
    )
    .await
}

/// The operator opens gate `g` for an hour, with `ticket` if given.
pub async fn open(hub: &Hub, ticket: Option<&str>) -> common::Resp {
    let mut body = json!({"for": "1h", "reason": "deploy"});
    if let Some(t) = ticket {
        body["ticket"] = json!(t);
    }
    hub.post_json("/api/v1/gates/g/open", &hub.operator, body)
        .await
}

/// How many overrides gate `g` has.
pub async fn live_overrides(hub: &Hub) -> usize {
    hub.get("/api/v1/overrides?gate=g").await.body["items"]
        .as_array()
        .unwrap()
        .len()
}

/// The newest audit entry's action and `after`.
pub async fn last_audit(hub: &Hub) -> (String, Value) {
    sqlx::query_as("select action, coalesce(after, 'null') from audit_log order by id desc limit 1")
        .fetch_one(&hub.pool)
        .await
        .unwrap()
}
