//! Shared setup for the hub's REST tests: a fresh database, a service with a
//! manual clock, tokens for each role, and a helper to call the router.
#![allow(dead_code)]

use fleetgate_hub::ServiceDefaults;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use chrono::{DateTime, TimeZone, Utc};
use fleetgate_hub::clock::ManualClock;
use fleetgate_hub::config::{GrpcOptions, HttpOptions};
use fleetgate_hub::replica::Replica;
use fleetgate_hub::service::types::CreateToken;
use fleetgate_hub::{Actor, AppState, Role, Service, app, db};
use serde_json::Value;
use sqlx::PgPool;
use tower::ServiceExt as _;

/// Secret of the bootstrap admin token in tests.
pub const ADMIN: &str = "fga_test-admin-secret-0123456789";

/// A hub on a fresh database.
pub struct Hub {
    pub app: Router,
    pub service: Service,
    pub clock: ManualClock,
    pub pool: PgPool,
    /// The test database's URL.
    pub url: String,
    pub admin: String,
    pub operator: String,
    pub viewer: String,
}

/// The HTTP side of a replica of `service` with default settings, built as
/// every hub is ([`Replica::new`]).
pub fn state(service: &Service) -> AppState {
    AppState::from_replica(Replica::new(
        service.clone(),
        HttpOptions::default(),
        GrpcOptions::default(),
    ))
}

/// Wednesday 2026-11-25 12:00 UTC.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap()
}

/// A response: status, headers, JSON body (Null if empty or not JSON).
pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Hub {
    pub async fn new() -> Self {
        Self::with_body_limit(1024 * 1024).await
    }

    pub async fn with_body_limit(limit: usize) -> Self {
        // Logs show up with a failing test's output only.
        let _ = tracing_subscriber::fmt()
            .with_test_writer()
            .with_env_filter("warn")
            .try_init();
        let tdb = fleetgate_tests::test_db().await;
        let pool = db::connect(&tdb.url, 10).await.expect("connect");
        db::migrate(&pool).await.expect("migrate");
        let clock = ManualClock::new(t0());
        let service = Service::with_clock(pool.clone(), Arc::new(clock.clone()));
        service
            .ensure_admin_token(ADMIN)
            .await
            .expect("admin token");
        let root = Actor::new("bootstrap-admin", Role::Admin);
        let mut secrets = Vec::new();
        for (name, role) in [("ops", "operator"), ("reader", "viewer")] {
            let t = service
                .create_token(
                    &root,
                    CreateToken {
                        name: name.into(),
                        role: role.into(),
                        scope: None,
                    },
                    None,
                )
                .await
                .expect("token");
            secrets.push(t.secret);
        }
        let state = AppState {
            body_limit: limit,
            ..state(&service)
        };
        Self {
            app: app(state),
            service,
            clock,
            pool,
            url: tdb.url.clone(),
            admin: ADMIN.to_string(),
            operator: secrets[0].clone(),
            viewer: secrets[1].clone(),
        }
    }

    /// Calls the router with an optional token and an optional
    /// `(content-type, body)`.
    pub async fn call(
        &self,
        method: Method,
        uri: &str,
        token: Option<&str>,
        body: Option<(&str, String)>,
    ) -> Resp {
        self.call_with(method, uri, token, body, &[]).await
    }

    /// Like [`call`] with extra headers.
    pub async fn call_with(
        &self,
        method: Method,
        uri: &str,
        token: Option<&str>,
        body: Option<(&str, String)>,
        headers: &[(&str, &str)],
    ) -> Resp {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = match body {
            Some((ct, b)) => req.header("content-type", ct).body(Body::from(b)),
            None => req.body(Body::empty()),
        }
        .expect("request");
        let resp = self.app.clone().oneshot(req).await.expect("oneshot");
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = axum::body::to_bytes(resp.into_body(), 64 * 1024 * 1024)
            .await
            .expect("body");
        let text = String::from_utf8_lossy(&bytes).to_string();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Resp {
            status,
            headers,
            body,
            text,
        }
    }

    pub async fn get(&self, uri: &str) -> Resp {
        self.call(Method::GET, uri, Some(&self.admin), None).await
    }

    pub async fn post_json(&self, uri: &str, token: &str, body: Value) -> Resp {
        self.call(
            Method::POST,
            uri,
            Some(token),
            Some(("application/json", body.to_string())),
        )
        .await
    }

    /// Registers a cluster with labels; returns its spoke token.
    pub async fn register(&self, name: &str, labels: Value) -> String {
        let r = self
            .post_json(
                "/api/v1/clusters",
                &self.admin,
                serde_json::json!({"name": name, "labels": labels}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        r.body["token"].as_str().unwrap().to_string()
    }

    /// Creates a [`simple_gate`] as admin (must succeed).
    pub async fn simple_gate(&self, name: &str, clusters: &[&str], state: &str) {
        let r = self
            .post_json(
                "/api/v1/gates",
                &self.admin,
                simple_gate(name, clusters, state),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    }

    /// Cancels override `id` as the operator (`DELETE /api/v1/overrides/{id}`).
    pub async fn cancel_override(&self, id: &str) -> Resp {
        let uri = format!("/api/v1/overrides/{id}");
        self.call(Method::DELETE, &uri, Some(&self.operator), None)
            .await
    }

    /// Creates a gate from YAML.
    pub async fn create_gate_yaml(&self, yaml: &str) -> Resp {
        self.call(
            Method::POST,
            "/api/v1/gates",
            Some(&self.admin),
            Some(("application/yaml", yaml.to_string())),
        )
        .await
    }

    /// Rows in the audit log.
    pub async fn audit_count(&self) -> i64 {
        let (n,): (i64,) = sqlx::query_as("select count(*) from audit_log")
            .fetch_one(&self.pool)
            .await
            .unwrap();
        n
    }

    /// The fleet revision.
    pub async fn revision(&self) -> i64 {
        self.service.fleet_revision().await.unwrap()
    }

    /// A digest of every table a write may touch (to prove nothing changed).
    pub async fn fingerprint(&self) -> String {
        let (s,): (String,) = sqlx::query_as(
            "select concat_ws('|', \
               (select coalesce(string_agg(name || ':' || version || ':' || manifest::text, ',' order by name), '') from gates), \
               (select coalesce(string_agg(name || ':' || labels::text || ':' || encode(token_hash, 'hex'), ',' order by name), '') from clusters), \
               (select coalesce(string_agg(id::text || ':' || coalesce(cancelled_at::text, ''), ',' order by id), '') from overrides), \
               (select coalesce(string_agg(name || ':' || coalesce(revoked_at::text, ''), ',' order by name), '') from api_tokens), \
               (select count(*)::text from audit_log), \
               (select revision::text from fleet_revision))",
        )
        .fetch_one(&self.pool)
        .await
        .unwrap();
        s
    }
}

/// A gate: allow Mon 08:00 for 81h in Europe/Berlin, default closed, for
/// clusters labelled env=<env>.
pub fn business_hours(name: &str, env: &str) -> String {
    format!(
        r#"apiVersion: fleetgate.io/v1
kind: Gate
metadata:
  name: {name}
spec:
  clusters:
    selector:
      matchLabels:
        env: {env}
  default: closed
  timeZone: Europe/Berlin
  windows:
    - name: mon-to-thu
      kind: allow
      schedule: "0 8 * * MON"
      duration: 81h
"#
    )
}

/// Clusters `a`, `b` (`env: prod`) and `c` (`env: dev`), and gate `g` closed on `a`
/// and `b`: the fleet the REST override and dashboard tests start from.
pub async fn prod_pair_gated() -> Hub {
    let hub = Hub::new().await;
    hub.register("a", serde_json::json!({"env": "prod"})).await;
    hub.register("b", serde_json::json!({"env": "prod"})).await;
    hub.register("c", serde_json::json!({"env": "dev"})).await;
    let r = hub
        .post_json(
            "/api/v1/gates",
            &hub.admin,
            simple_gate("g", &["a", "b"], "closed"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    hub
}

/// The state and reason of the first gate in `cluster`'s status (the REST override and
/// freeze tests' one gate `g`).
pub async fn gate_state(hub: &Hub, cluster: &str) -> (String, String) {
    let r = hub.get(&format!("/api/v1/clusters/{cluster}/status")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let g = &r.body["gates"][0];
    (
        g["state"].as_str().unwrap().to_string(),
        g["reason"].as_str().unwrap().to_string(),
    )
}

/// A connection listening on the hub's change channel (`fleetgate_changes`).
pub async fn changes_listener(hub: &Hub) -> sqlx::postgres::PgListener {
    let mut l = sqlx::postgres::PgListener::connect_with(&hub.pool)
        .await
        .unwrap();
    l.listen(fleetgate_hub::db::revision::CHANGES_CHANNEL)
        .await
        .unwrap();
    l
}

/// The next change notice on `l` (at most 10 s).
pub async fn next_change(
    l: &mut sqlx::postgres::PgListener,
) -> fleetgate_hub::db::revision::ChangeNotice {
    let n = tokio::time::timeout(std::time::Duration::from_secs(10), l.recv())
        .await
        .expect("no notification within 10s")
        .expect("listener");
    serde_json::from_str(n.payload()).expect("payload JSON")
}

/// A gate without windows, default `state`, for the named clusters.
pub fn simple_gate(name: &str, clusters: &[&str], state: &str) -> Value {
    serde_json::json!({
        "apiVersion": "fleetgate.io/v1",
        "kind": "Gate",
        "metadata": {"name": name},
        "spec": {"clusters": {"names": clusters}, "default": state}
    })
}

/// `clusters`' spokes are connected (through `reports`) and report `gate`'s Kustomization
/// `flux-system/apps` applied at its source's newest revision (`good`) or still at the old
/// one, as a spoke that has seen every snapshot so far (the rollout report fence passes).
pub async fn report_apps(
    reports: &fleetgate_hub::service::reports::Reports,
    clusters: &[&str],
    gate: &str,
    good: bool,
) {
    use fleetgate_hub::db::reports::ReportedObject;
    for c in clusters {
        reports.connected(c, "test");
        let object = ReportedObject {
            kind: "Kustomization".into(),
            namespace: "flux-system".into(),
            name: "apps".into(),
            gates: vec![gate.into()],
            last_applied_revision: Some(if good { "main@sha1:b" } else { "main@sha1:a" }.into()),
            newest_source_revision: Some("main@sha1:b".into()),
            ..ReportedObject::default()
        };
        reports.submit(
            c,
            i64::MAX as u64,
            fleetgate_hub::service::reports::Assembled {
                objects: vec![object],
                held_objects: vec![],
                local_gates: vec![],
                problems: vec![],
                inventory: None,
            },
            0,
        );
    }
    reports.flush_all().await;
}

/// What this backend did to one table and has not yet flushed to the shared
/// statistics (`pg_stat_xact_user_tables`: this transaction's counts and
/// maybe earlier ones', so compare two reads with [`TableReads::since`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableReads {
    pub seq_scans: i64,
    pub idx_scans: i64,
    /// Live rows fetched by index scans.
    pub idx_fetches: i64,
}

impl TableReads {
    /// The counts of `table` now, on `conn`'s backend.
    pub async fn of(conn: &mut sqlx::PgConnection, table: &str) -> Self {
        let (seq_scans, idx_scans, idx_fetches) = sqlx::query_as(
            "select coalesce(seq_scan, 0), coalesce(idx_scan, 0), coalesce(idx_tup_fetch, 0) \
             from pg_stat_xact_user_tables where relname = $1",
        )
        .bind(table)
        .fetch_one(conn)
        .await
        .unwrap();
        Self {
            seq_scans,
            idx_scans,
            idx_fetches,
        }
    }

    /// What happened between `before` and these counts.
    pub fn since(self, before: Self) -> Self {
        Self {
            seq_scans: self.seq_scans - before.seq_scans,
            idx_scans: self.idx_scans - before.idx_scans,
            idx_fetches: self.idx_fetches - before.idx_fetches,
        }
    }
}
