//! Shared setup for the hub-level rollout tests (`rollouts/`, `rollout_fence.rs`): six
//! `env: prod` clusters, a rollout gate whose window opens at 13:00 UTC, a replica for
//! its report path, and helpers that step the driver on the injected clock and read what
//! each cluster's spoke would receive.
#![allow(dead_code)]

use axum::http::{Method, StatusCode};
use chrono::{Duration, TimeZone, Utc};
use fleetgate_hub::config::{GrpcOptions, HttpOptions};
use fleetgate_hub::replica::Replica;
use serde_json::{Value, json};

use crate::common::{self, Hub};

/// t0 is Wed 12:00 UTC; the window opens at 13:00 for 4 hours.
pub fn gate(extra: &str, waves: &str) -> String {
    format!(
        r#"apiVersion: fleetgate.io/v1
kind: Gate
metadata: {{name: waves}}
spec:
  clusters: {{selector: {{matchLabels: {{env: prod}}}}}}
  default: closed
  windows: [{{name: day, kind: allow, schedule: "0 13 * * *", duration: 4h}}]
  rollout:
    soak: 10m
    healthTimeout: 30m
{extra}    waves:
{waves}"#
    )
}

pub const THREE_WAVES: &str = "      - {name: canary, clusters: {names: [c1]}}\n      - {name: early, count: 2}\n      - {name: rest}\n";

pub struct Fleet {
    pub hub: Hub,
    pub replica: Replica,
}

pub async fn fleet(extra: &str, waves: &str) -> Fleet {
    fleet_with_gate(&gate(extra, waves)).await
}

/// Six clusters and the gate `yaml` (named `waves`).
pub async fn fleet_with_gate(yaml: &str) -> Fleet {
    let hub = Hub::new().await;
    for i in 1..=6 {
        hub.register(&format!("c{i}"), json!({"env": "prod"})).await;
    }
    let r = hub.create_gate_yaml(yaml).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let replica = Replica::new(
        hub.service.clone(),
        HttpOptions::default(),
        GrpcOptions::default(),
    );
    Fleet { hub, replica }
}

impl Fleet {
    pub async fn step(&self) -> Vec<String> {
        self.hub
            .service
            .step_rollouts()
            .await
            .expect("step")
            .into_iter()
            .map(|e| e.action.to_string())
            .collect()
    }

    pub fn at(&self, h: u32, m: u32) {
        self.hub
            .clock
            .set(Utc.with_ymd_and_hms(2026, 11, 25, h, m, 0).unwrap());
    }

    pub fn advance(&self, minutes: i64) {
        self.hub.clock.advance(Duration::minutes(minutes));
    }

    /// The release in `cluster`'s snapshot (what its spoke receives).
    pub async fn release(&self, cluster: &str) -> Option<(u32, chrono::DateTime<Utc>)> {
        let s = self.hub.service.cluster_snapshot(cluster).await.unwrap();
        let g = s.gates.iter().find(|g| g.name == "waves").unwrap();
        g.release.as_ref().map(|r| (r.wave, r.opening_at))
    }

    pub async fn released(&self) -> Vec<String> {
        let mut out = Vec::new();
        for i in 1..=6 {
            let c = format!("c{i}");
            if self.release(&c).await.is_some() {
                out.push(c);
            }
        }
        out
    }

    /// `clusters`' spokes are connected and report the gate's Kustomization applied at its
    /// source's newest revision (`good`) or still at the old one.
    pub async fn report(&self, clusters: &[&str], good: bool) {
        common::report_apps(&self.replica.reports, clusters, "waves", good).await;
    }

    /// `cluster`'s spoke is connected and reports the gate's Kustomization at its source's
    /// newest revision but Ready=False with `message` (a health check failing).
    pub async fn report_failing(&self, cluster: &str, message: &str) {
        use fleetgate_hub::db::reports::ReportedObject;
        self.replica.reports.connected(cluster, "test");
        let object = ReportedObject {
            kind: "Kustomization".into(),
            namespace: "flux-system".into(),
            name: "apps".into(),
            gates: vec!["waves".into()],
            last_applied_revision: Some("main@sha1:b".into()),
            newest_source_revision: Some("main@sha1:b".into()),
            ready: Some("False".into()),
            ready_reason: Some("HealthCheckFailed".into()),
            ready_message: Some(message.into()),
            ..ReportedObject::default()
        };
        self.replica.reports.submit(
            cluster,
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
        self.replica.reports.flush_all().await;
    }

    /// The gate's (state, reason) on `cluster` as `GET /clusters/{name}/status` shows it.
    pub async fn gate_state(&self, cluster: &str) -> (String, String) {
        let r = self
            .hub
            .get(&format!("/api/v1/clusters/{cluster}/status"))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let g = &r.body["gates"][0];
        (
            g["state"].as_str().unwrap().to_string(),
            g["reason"].as_str().unwrap().to_string(),
        )
    }

    pub async fn status(&self) -> Value {
        let r = self.hub.get("/api/v1/gates/waves/rollout").await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        r.body
    }

    pub async fn command(&self, cmd: &str) -> common::Resp {
        self.hub
            .call(
                Method::POST,
                &format!("/api/v1/gates/waves/rollout/{cmd}"),
                Some(&self.hub.operator),
                None,
            )
            .await
    }

    pub async fn audit(&self, action: &str) -> i64 {
        let (n,): (i64,) = sqlx::query_as("select count(*) from audit_log where action = $1")
            .bind(action)
            .fetch_one(&self.hub.pool)
            .await
            .unwrap();
        n
    }

    /// Runs a THREE_WAVES rollout from the window's start (13:00) to completion at 13:30,
    /// every spoke reporting healthy: every cluster released for the 13:00 opening.
    pub async fn complete(&self) {
        self.at(13, 0);
        assert_eq!(self.step().await, ["rollout.start", "rollout.release"]);
        for wave in [&["c1"][..], &["c2", "c3"], &["c4", "c5", "c6"]] {
            self.report(wave, true).await;
            assert_eq!(self.step().await, ["rollout.healthy"]);
            self.advance(10);
            self.step().await;
        }
        assert_eq!(self.status().await["state"], "completed");
        assert_eq!(self.released().await.len(), 6);
    }

    /// Creates an override (`open` or `close`) with `body`; its id.
    pub async fn override_(&self, state: &str, body: Value) -> String {
        let r = self
            .hub
            .post_json(
                &format!("/api/v1/gates/waves/{state}"),
                &self.hub.operator,
                body,
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        r.body["id"].as_str().expect("override id").to_string()
    }

    /// Cancels override `id`.
    pub async fn cancel(&self, id: &str) {
        let r = self.hub.cancel_override(id).await;
        assert!(r.status.is_success(), "{} {}", r.status, r.text);
    }
}
