//! API semantics over raw HTTP, checked against the real server's shapes: CRD schema
//! validation (422 causes) and pruning, `spec.suspend` on every Flux kind, status
//! subresource and generation rules, optimistic concurrency, apply without a field
//! manager, watch from a compacted resourceVersion, finalizers, and RBAC (401/403).

mod common;

use std::collections::BTreeMap;

use common::{CLUSTER, get, start, start_default};
use fleetgate_sim::{RbacConfig, RbacUser, SimConfig};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

const KS_PATH: &str = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/default/kustomizations";

fn ks(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
           "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

fn valid_spec() -> Value {
    json!({"interval": "5m", "prune": true, "sourceRef": {"kind": "GitRepository", "name": "repo"}})
}

async fn send(req: reqwest::RequestBuilder) -> (StatusCode, Value, Vec<String>) {
    let resp = req.send().await.unwrap();
    let code = resp.status();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|h| h.to_str().unwrap().to_string())
        .collect();
    let body = resp.json().await.unwrap_or(Value::Null);
    (code, body, warnings)
}

#[tokio::test]
async fn schema_validation_returns_422_with_causes_and_prunes_unknown_fields() {
    let sim = start_default().await;
    let base = sim.url(CLUSTER).unwrap();
    let http = Client::new();
    let mut spec = valid_spec();
    spec["interval"] = json!(5);
    let (code, body, _) = send(http.post(format!("{base}{KS_PATH}")).json(&ks("bad", spec))).await;
    assert_eq!(code, 422);
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "Invalid");
    assert_eq!(
        body["message"],
        r#"Kustomization.kustomize.toolkit.fluxcd.io "bad" is invalid: spec.interval: Invalid value: "integer": spec.interval in body must be of type string: "integer""#
    );
    assert_eq!(
        body["details"]["causes"][0],
        json!({"reason": "FieldValueInvalid", "message": r#"Invalid value: "integer": spec.interval in body must be of type string: "integer""#, "field": "spec.interval"})
    );
    assert_eq!(body["details"]["group"], "kustomize.toolkit.fluxcd.io");
    assert_eq!(body["details"]["kind"], "Kustomization");

    let (code, body, _) = send(
        http.post(format!("{base}{KS_PATH}"))
            .json(&ks("bad", json!({"interval": "5m"}))),
    )
    .await;
    assert_eq!(code, 422);
    let reasons: Vec<(&str, &str)> = body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["reason"].as_str().unwrap(), c["field"].as_str().unwrap()))
        .collect();
    assert!(
        reasons.contains(&("FieldValueRequired", "spec.prune")),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&("FieldValueRequired", "spec.sourceRef")),
        "{reasons:?}"
    );

    // Unknown fields vanish (structural pruning) with a warning, as with fieldValidation=Warn.
    let mut spec = valid_spec();
    spec["suspnd"] = json!(true);
    let (code, body, warnings) = send(
        http.post(format!("{base}{KS_PATH}"))
            .json(&ks("typo", spec)),
    )
    .await;
    assert_eq!(code, 201);
    assert!(body["spec"].get("suspnd").is_none());
    assert_eq!(warnings, vec![r#"299 - "unknown field \"spec.suspnd\"""#]);
    assert!(
        get(
            &sim,
            "kustomize.toolkit.fluxcd.io/v1",
            "Kustomization",
            "default",
            "typo"
        )
        .unwrap()["spec"]
            .get("suspnd")
            .is_none()
    );
    assert_eq!(body["metadata"]["generation"], 1);
    assert!(
        body["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| u.len() == 36)
    );
    sim.shutdown().await;
}

/// Minimal valid objects of every Flux kind.
fn every_flux_kind() -> Vec<(&'static str, &'static str, Value)> {
    let src = json!({"kind": "GitRepository", "name": "repo"});
    vec![
        (
            "kustomize.toolkit.fluxcd.io/v1",
            "kustomizations",
            json!({"kind": "Kustomization", "spec": valid_spec()}),
        ),
        (
            "helm.toolkit.fluxcd.io/v2",
            "helmreleases",
            json!({"kind": "HelmRelease", "spec": {"interval": "5m", "chartRef": {"kind": "OCIRepository", "name": "chart"}}}),
        ),
        (
            "source.toolkit.fluxcd.io/v1",
            "gitrepositories",
            json!({"kind": "GitRepository", "spec": {"interval": "1m", "url": "https://example.com/repo"}}),
        ),
        (
            "source.toolkit.fluxcd.io/v1",
            "ocirepositories",
            json!({"kind": "OCIRepository", "spec": {"interval": "1m", "url": "oci://example.com/repo"}}),
        ),
        (
            "source.toolkit.fluxcd.io/v1",
            "helmrepositories",
            json!({"kind": "HelmRepository", "spec": {"interval": "1m", "url": "https://charts.example.com"}}),
        ),
        (
            "source.toolkit.fluxcd.io/v1",
            "buckets",
            json!({"kind": "Bucket", "spec": {"interval": "1m", "bucketName": "b", "endpoint": "s3.example.com"}}),
        ),
        (
            "source.toolkit.fluxcd.io/v1",
            "helmcharts",
            json!({"kind": "HelmChart", "spec": {"interval": "1m", "chart": "podinfo", "sourceRef": {"kind": "HelmRepository", "name": "repo"}}}),
        ),
        (
            "image.toolkit.fluxcd.io/v1",
            "imageupdateautomations",
            json!({"kind": "ImageUpdateAutomation", "spec": {"interval": "1m", "sourceRef": src}}),
        ),
    ]
}

#[tokio::test]
async fn suspend_round_trips_on_every_flux_kind() {
    let sim = start_default().await;
    let base = sim.url(CLUSTER).unwrap();
    let http = Client::new();
    for (api_version, plural, mut obj) in every_flux_kind() {
        obj["apiVersion"] = json!(api_version);
        obj["metadata"] = json!({"name": "x", "namespace": "default"});
        obj["spec"]["suspend"] = json!(true);
        let coll = format!("{base}/apis/{api_version}/namespaces/default/{plural}");
        let (code, body, _) = send(http.post(&coll).json(&obj)).await;
        assert_eq!(code, 201, "{plural}: {body}");
        assert_eq!(body["spec"]["suspend"], true, "{plural}");
        let patch = json!({"spec": {"suspend": false}});
        let (code, body, _) = send(
            http.patch(format!("{coll}/x"))
                .header("content-type", "application/merge-patch+json")
                .json(&patch),
        )
        .await;
        assert_eq!(code, 200, "{plural}: {body}");
        let (_, body, _) = send(http.get(format!("{coll}/x"))).await;
        assert_eq!(body["spec"]["suspend"], false, "{plural}");
        assert_eq!(body["metadata"]["generation"], 2, "{plural}");
        let (_, body, _) = send(
            http.patch(format!("{coll}/x"))
                .header("content-type", "application/merge-patch+json")
                .json(&json!({"spec": {"suspend": "yes"}})),
        )
        .await;
        assert_eq!(body["code"], 422, "{plural}: suspend must be a boolean");
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn status_subresource_generation_and_concurrency() {
    let sim = start(SimConfig::with_clusters(1)).await;
    let base = sim.url(CLUSTER).unwrap();
    let http = Client::new();
    let mut spec = valid_spec();
    spec["suspend"] = json!(true); // keep the Flux simulator away from it
    let (_, created, _) = send(http.post(format!("{base}{KS_PATH}")).json(&ks("s", spec))).await;
    let item = format!("{base}{KS_PATH}/s");
    let merge = |url: String, body: Value| {
        http.patch(url)
            .header("content-type", "application/merge-patch+json")
            .json(&body)
    };

    // Status on the main resource is ignored; metadata changes keep the generation.
    let (_, o, _) = send(merge(
        item.clone(),
        json!({"status": {"lastAppliedRevision": "x"}, "metadata": {"labels": {"a": "b"}}}),
    ))
    .await;
    assert_eq!(o["status"].get("lastAppliedRevision"), None);
    assert_eq!(o["metadata"]["labels"]["a"], "b");
    assert_eq!(o["metadata"]["generation"], 1);
    assert_ne!(
        o["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    // Spec on /status is ignored; status changes there.
    let (code, o, _) = send(merge(
        format!("{item}/status"),
        json!({"spec": {"interval": "1h"}, "status": {"lastAppliedRevision": "main@sha1:1"}}),
    ))
    .await;
    assert_eq!(code, 200);
    assert_eq!(o["spec"]["interval"], "5m");
    assert_eq!(o["status"]["lastAppliedRevision"], "main@sha1:1");
    assert_eq!(o["metadata"]["generation"], 1);
    // A spec change bumps the generation; a no-op patch writes nothing.
    let (_, o, _) = send(merge(item.clone(), json!({"spec": {"interval": "10m"}}))).await;
    assert_eq!(o["metadata"]["generation"], 2);
    let rv = o["metadata"]["resourceVersion"].clone();
    let (_, o, _) = send(merge(item.clone(), json!({"spec": {"interval": "10m"}}))).await;
    assert_eq!(o["metadata"]["resourceVersion"], rv);

    // PUT with a stale resourceVersion → 409 Conflict; without one → 422.
    let mut stale = o.clone();
    stale["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    let (code, body, _) = send(http.put(&item).json(&stale)).await;
    assert_eq!(code, 409);
    assert_eq!(
        body["message"],
        r#"Operation cannot be fulfilled on kustomizations.kustomize.toolkit.fluxcd.io "s": the object has been modified; please apply your changes to the latest version and try again"#
    );
    let mut unconditional = o.clone();
    unconditional["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let (code, _, _) = send(http.put(&item).json(&unconditional)).await;
    assert_eq!(code, 422);
    let (code, body, _) = send(
        http.post(format!("{base}{KS_PATH}"))
            .json(&ks("s", valid_spec())),
    )
    .await;
    assert_eq!(
        (code.as_u16(), body["reason"].as_str()),
        (409, Some("AlreadyExists"))
    );

    // Apply needs a field manager.
    let (code, body, _) = send(
        http.patch(&item)
            .header("content-type", "application/apply-patch+yaml")
            .body("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        body["message"],
        r#"PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply requests"#
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn watch_from_compacted_rv_is_410_and_finalizers_delay_deletion() {
    let sim = start(SimConfig::with_clusters(1)).await;
    let base = sim.url(CLUSTER).unwrap();
    let http = Client::new();
    let cms = format!("{base}/api/v1/namespaces/default/configmaps");
    let (_, cm, _) = send(http.post(&cms).json(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "f", "finalizers": ["example.com/hold"]}}))).await;
    let rv = cm["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    sim.compact(CLUSTER).unwrap();
    let prior: u64 = rv.parse::<u64>().unwrap() - 1;
    let text = http
        .get(format!("{cms}?watch=true&resourceVersion={prior}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let ev: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(ev["type"], "ERROR");
    assert_eq!(ev["object"]["code"], 410);
    assert_eq!(ev["object"]["reason"], "Expired");

    let (code, body, _) = send(http.delete(format!("{cms}/f"))).await;
    assert_eq!(code, 202);
    assert!(body["metadata"]["deletionTimestamp"].is_string());
    let (code, _, _) = send(http.get(format!("{cms}/f"))).await;
    assert_eq!(code, 200, "held by its finalizer");
    let (code, _, _) = send(
        http.patch(format!("{cms}/f"))
            .header("content-type", "application/merge-patch+json")
            .json(&json!({"metadata": {"finalizers": null}})),
    )
    .await;
    assert_eq!(code, 200);
    let (code, body, _) = send(http.get(format!("{cms}/f"))).await;
    assert_eq!(code, 404);
    assert_eq!(body["message"], r#"configmaps "f" not found"#);
    sim.shutdown().await;
}

const SPOKE_RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: flux-gate, namespace: flux-system}
rules:
- apiGroups: ["kustomize.toolkit.fluxcd.io"]
  resources: ["kustomizations"]
  verbs: ["get", "list", "watch", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: flux-gate, namespace: flux-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: flux-gate}
subjects:
- {kind: ServiceAccount, name: spoke, namespace: fleetgate-system}
"#;

#[tokio::test]
async fn rbac_denies_like_the_real_server() {
    let sim = start(SimConfig {
        rbac: Some(RbacConfig {
            tokens: BTreeMap::from([(
                "spoke-token".to_string(),
                RbacUser::service_account("fleetgate-system", "spoke"),
            )]),
            manifests: vec![SPOKE_RBAC.to_string()],
            ..RbacConfig::default()
        }),
        ..SimConfig::with_clusters(1)
    })
    .await;
    sim.seed_fleet(3).await.unwrap();
    let base = sim.url(CLUSTER).unwrap();
    let http = Client::new();
    let (code, body, _) = send(http.get(format!("{base}/api"))).await;
    assert_eq!(
        (code.as_u16(), body["reason"].as_str()),
        (401, Some("Unauthorized"))
    );

    let spoke = |req: reqwest::RequestBuilder| req.bearer_auth("spoke-token");
    let ks =
        format!("{base}/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations");
    let (code, body, _) = send(spoke(http.get(&ks))).await;
    assert_eq!(code, 200, "{body}");
    let patch = json!({"spec": {"suspend": true}});
    let (code, _, _) = send(spoke(
        http.patch(format!("{ks}/infra-000"))
            .header("content-type", "application/merge-patch+json")
            .json(&patch),
    ))
    .await;
    assert_eq!(code, 200);

    let git =
        "/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/flux-system";
    let (code, body, _) = send(spoke(
        http.patch(format!("{base}{git}"))
            .header("content-type", "application/merge-patch+json")
            .json(&patch),
    ))
    .await;
    assert_eq!(code, 403);
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        r#"gitrepositories.source.toolkit.fluxcd.io "flux-system" is forbidden: User "system:serviceaccount:fleetgate-system:spoke" cannot patch resource "gitrepositories" in API group "source.toolkit.fluxcd.io" in the namespace "flux-system""#
    );
    let (code, body, _) = send(spoke(http.get(format!(
        "{base}/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations"
    ))))
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        r#"kustomizations.kustomize.toolkit.fluxcd.io is forbidden: User "system:serviceaccount:fleetgate-system:spoke" cannot list resource "kustomizations" in API group "kustomize.toolkit.fluxcd.io" at the cluster scope"#
    );
    let (code, _, _) = send(spoke(
        http.patch(format!("{ks}/infra-000/status"))
            .header("content-type", "application/merge-patch+json")
            .json(&json!({"status": {}})),
    ))
    .await;
    assert_eq!(code, 403, "status is a separate resource for RBAC");

    // The generated kubeconfig carries the admin token.
    assert!(
        sim.kubeconfig_yaml(CLUSTER)
            .unwrap()
            .contains("token: sim-admin-token")
    );
    let (code, _, _) = send(http.get(&ks).bearer_auth("sim-admin-token")).await;
    assert_eq!(code, 200);
    sim.shutdown().await;
}

/// Reads newline-delimited watch events until `n` arrived or the stream ends.
async fn watch_events(resp: &mut reqwest::Response, n: usize) -> Vec<Value> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while out.len() < n {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), resp.chunk())
            .await
            .expect("watch event within 10 s")
            .unwrap();
        let Some(chunk) = chunk else { break };
        buf.extend_from_slice(&chunk);
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            out.push(serde_json::from_slice(&line).unwrap());
        }
    }
    out
}

#[tokio::test]
async fn watch_initial_events_bookmarks_selectors_and_timeout() {
    let sim = start(SimConfig {
        bookmark_interval: std::time::Duration::from_millis(100),
        ..SimConfig::with_clusters(1)
    })
    .await;
    let base = sim.url(CLUSTER).unwrap();
    let http = Client::new();
    let cms = format!("{base}/api/v1/namespaces/default/configmaps");
    for name in ["a", "b"] {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"team": "x"}}});
        send(http.post(&cms).json(&cm)).await;
    }
    // sendInitialEvents: current state as ADDED, then a BOOKMARK marking its end.
    let mut resp = http
        .get(format!("{cms}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=team%3Dx"))
        .send()
        .await
        .unwrap();
    let evs = watch_events(&mut resp, 3).await;
    assert_eq!(evs[0]["type"], "ADDED");
    assert_eq!(evs[1]["type"], "ADDED");
    assert_eq!(evs[2]["type"], "BOOKMARK");
    assert_eq!(
        evs[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(evs[2]["object"]["kind"], "ConfigMap");

    // Leaving the selector arrives as DELETED, entering as ADDED; bookmarks keep coming.
    let relabel = |name: &str, team: &str| {
        http.patch(format!("{cms}/{name}"))
            .header("content-type", "application/merge-patch+json")
            .json(&json!({"metadata": {"labels": {"team": team}}}))
    };
    send(relabel("a", "y")).await;
    send(relabel("a", "x")).await;
    let mut changes = Vec::new();
    while changes.len() < 2 {
        for ev in watch_events(&mut resp, 1).await {
            if ev["type"] != "BOOKMARK" {
                changes.push(ev);
            }
        }
    }
    assert_eq!(changes[0]["type"], "DELETED");
    assert_eq!(changes[1]["type"], "ADDED");
    assert_eq!(changes[1]["object"]["metadata"]["name"], "a");
    let bookmark = watch_events(&mut resp, 1).await;
    assert_eq!(bookmark[0]["type"], "BOOKMARK");
    assert_eq!(
        bookmark[0]["object"]["metadata"]["resourceVersion"],
        changes[1]["object"]["metadata"]["resourceVersion"]
    );

    // timeoutSeconds ends the stream.
    let mut resp = http
        .get(format!("{cms}?watch=true&timeoutSeconds=1"))
        .send()
        .await
        .unwrap();
    let evs = watch_events(&mut resp, 10).await;
    assert_eq!(
        evs.len(),
        2,
        "two synthetic ADDED events, then the end: {evs:?}"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn both_event_apis_see_each_others_events_in_lists_and_watches() {
    let sim = start(SimConfig::with_clusters(1)).await;
    let base = sim.url(CLUSTER).unwrap();
    let http = Client::new();
    let core = format!("{base}/api/v1/namespaces/default/events");
    let new_api = format!("{base}/apis/events.k8s.io/v1/namespaces/default/events");
    let mut watch = http.get(format!("{core}?watch=true")).send().await.unwrap();
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "e1"}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "fleetgate-spoke", "reportingInstance": "spoke-0",
        "action": "Suspend", "reason": "GateClosed", "type": "Normal", "note": "held",
        "regarding": {"kind": "Kustomization", "name": "apps", "namespace": "default"}});
    let (code, _, _) = send(http.post(&new_api).json(&event)).await;
    assert_eq!(code, 201);
    let seen = watch_events(&mut watch, 1).await;
    assert_eq!(seen[0]["type"], "ADDED");
    assert_eq!(seen[0]["object"]["apiVersion"], "v1");
    assert_eq!(seen[0]["object"]["involvedObject"]["name"], "apps");
    assert_eq!(seen[0]["object"]["message"], "held");
    let (_, list, _) =
        send(http.get(format!("{core}?fieldSelector=involvedObject.name%3Dapps"))).await;
    assert_eq!(list["items"][0]["reason"], "GateClosed");
    sim.shutdown().await;
}
