//! RBAC's `resourceNames` on `list` and `watch`, as kube-apiserver applies it: a list or
//! watch whose field selector requires an exact `metadata.name` asks for that one object
//! (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go), so a Role naming it grants it;
//! any other list or watch of the collection stays forbidden.

mod common;

use std::collections::BTreeMap;

use common::{CLUSTER, start};
use fleetgate_sim::{RbacConfig, RbacUser, SimConfig};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

const ROLE: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: one-configmap, namespace: team}
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  resourceNames: ["wanted"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: one-configmap, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: one-configmap}
subjects:
- {kind: ServiceAccount, name: reader, namespace: team}
"#;

async fn send(req: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let resp = req.send().await.unwrap();
    let code = resp.status();
    (code, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn resource_names_grant_a_list_and_watch_by_an_exact_name_selector() {
    let sim = start(SimConfig {
        rbac: Some(RbacConfig {
            tokens: BTreeMap::from([(
                "reader-token".to_string(),
                RbacUser::service_account("team", "reader"),
            )]),
            manifests: vec![ROLE.to_string()],
            ..RbacConfig::default()
        }),
        ..SimConfig::with_clusters(1)
    })
    .await;
    let base = sim.url(CLUSTER).unwrap();
    let http = Client::new();
    let admin = |req: reqwest::RequestBuilder| req.bearer_auth("sim-admin-token");
    let reader = |req: reqwest::RequestBuilder| req.bearer_auth("reader-token");
    let (code, _) = send(admin(http.post(format!("{base}/api/v1/namespaces")).json(
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
    )))
    .await;
    assert!(code == 201 || code == 409, "namespace team: {code}");
    let cms = format!("{base}/api/v1/namespaces/team/configmaps");
    for name in ["wanted", "other"] {
        let (code, body) = send(admin(http.post(&cms).json(&json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "team"}, "data": {"k": name}
        }))))
        .await;
        assert_eq!(code, 201, "{body}");
    }

    // list: the one named object, nothing else.
    let (code, body) = send(reader(
        http.get(&cms)
            .query(&[("fieldSelector", "metadata.name=wanted")]),
    ))
    .await;
    assert_eq!(code, 200, "{body}");
    let names: Vec<&str> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["wanted"]);

    // watch: the initial event is the named object.
    let mut resp = reader(
        http.get(&cms)
            .query(&[("fieldSelector", "metadata.name=wanted"), ("watch", "true")]),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(resp.status(), 200);
    let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), resp.chunk())
        .await
        .expect("a watch event within 10 s")
        .unwrap()
        .expect("the watch sent an event");
    let line = chunk.split(|b| *b == b'\n').next().unwrap();
    let event: Value = serde_json::from_slice(line).unwrap();
    assert_eq!(
        (
            event["type"].as_str(),
            event["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("wanted"))
    );
    drop(resp);

    // Anything else stays forbidden, with the real server's message (naming the object
    // when the selector names one).
    let denied = [
        (
            None,
            r#"configmaps is forbidden: User "system:serviceaccount:team:reader" cannot list resource "configmaps" in API group "" in the namespace "team""#,
        ),
        (
            Some("metadata.name=other"),
            r#"configmaps "other" is forbidden: User "system:serviceaccount:team:reader" cannot list resource "configmaps" in API group "" in the namespace "team""#,
        ),
        (
            Some("metadata.name!=other"),
            r#"configmaps is forbidden: User "system:serviceaccount:team:reader" cannot list resource "configmaps" in API group "" in the namespace "team""#,
        ),
    ];
    for (selector, message) in denied {
        let mut req = http.get(&cms);
        if let Some(s) = selector {
            req = req.query(&[("fieldSelector", s)]);
        }
        let (code, body) = send(reader(req)).await;
        assert_eq!(code, 403, "{selector:?}: {body}");
        assert_eq!(body["message"], message, "{selector:?}");
    }
    sim.shutdown().await;
}
