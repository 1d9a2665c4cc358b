//! The real kubectl against the simulator: discovery, short names, tables and YAML,
//! merge/JSON patches, server-side apply (incl. conflicts), strict field validation,
//! watch, delete, and the 415 of a strategic merge patch on a custom resource.

mod common;

use std::time::Duration;

use common::{Kubectl, get, start_default};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

const KS: &str = "kustomize.toolkit.fluxcd.io/v1";

#[tokio::test]
async fn get_with_short_names_tables_and_yaml() {
    let sim = start_default().await;
    sim.seed_fleet(10).await.unwrap();
    let k = Kubectl::new(&sim);

    // Flux's Ready printer column appears once the simulator has reconciled.
    common::eventually("ready kustomizations", || async {
        let out = k.run(&["get", "ks", "-n", "flux-system"]).await;
        out.stdout
            .contains("Applied revision: main@sha1:")
            .then_some(())
    })
    .await;
    let table = k.ok(&["get", "ks", "-n", "flux-system"]).await;
    let header = table.lines().next().unwrap_or_default();
    for col in ["NAME", "AGE", "READY", "STATUS"] {
        assert!(header.contains(col), "header {header:?} lacks {col}");
    }
    assert!(table.contains("infra-000"), "{table}");

    let hr: Value =
        fleetgate_policy::yaml::from_str(&k.ok(&["get", "hr", "-n", "apps", "-o", "yaml"]).await)
            .unwrap();
    assert_eq!(hr["kind"], "List");
    let items = hr["items"].as_array().unwrap();
    assert!(!items.is_empty());
    assert!(
        items
            .iter()
            .all(|i| i["kind"] == "HelmRelease" && i["apiVersion"] == "helm.toolkit.fluxcd.io/v2")
    );

    let rev = k
        .ok(&[
            "get",
            "gitrepo",
            "flux-system",
            "-n",
            "flux-system",
            "-o",
            "jsonpath={.status.artifact.revision}",
        ])
        .await;
    assert!(rev.starts_with("main@sha1:") && rev.len() == 50, "{rev}");
    let all = k.ok(&["get", "ocirepo,helmrepo", "-A", "-o", "name"]).await;
    assert!(
        all.contains("ocirepository.source.toolkit.fluxcd.io/manifests"),
        "{all}"
    );
    assert!(
        all.contains("helmrepository.source.toolkit.fluxcd.io/podinfo"),
        "{all}"
    );

    let missing = k.run(&["get", "ks", "nope", "-n", "flux-system"]).await;
    missing.assert_fails_with(r#"Error from server (NotFound): kustomizations.kustomize.toolkit.fluxcd.io "nope" not found"#);
    sim.shutdown().await;
}

#[tokio::test]
async fn patch_merge_json_and_strategic() {
    let sim = start_default().await;
    sim.seed_fleet(10).await.unwrap();
    let k = Kubectl::new(&sim);
    let suspend = |sim: &fleetgate_sim::Sim| {
        get(sim, KS, "Kustomization", "flux-system", "apps-003").unwrap()["spec"]["suspend"].clone()
    };

    k.ok(&[
        "patch",
        "ks",
        "apps-003",
        "-n",
        "flux-system",
        "--type=merge",
        "-p",
        r#"{"spec":{"suspend":true}}"#,
    ])
    .await;
    assert_eq!(suspend(&sim), true);
    k.ok(&[
        "patch",
        "ks",
        "apps-003",
        "-n",
        "flux-system",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/suspend","value":false}]"#,
    ])
    .await;
    assert_eq!(suspend(&sim), false);

    // kubectl's default patch type is strategic merge, which CRDs do not support.
    let out = k
        .run(&[
            "patch",
            "ks",
            "apps-003",
            "-n",
            "flux-system",
            "-p",
            r#"{"spec":{"suspend":true}}"#,
        ])
        .await;
    assert!(!out.ok);
    assert!(
        out.stderr.contains("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"),
        "{}",
        out.stderr
    );
    assert_eq!(suspend(&sim), false, "a rejected patch changes nothing");
    sim.shutdown().await;
}

const APPLIED: &str = r#"
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: applied
  namespace: flux-system
spec:
  interval: 5m
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"#;

#[tokio::test]
async fn server_side_apply_conflicts_and_strict_validation() {
    let sim = start_default().await;
    sim.seed_fleet(3).await.unwrap();
    let k = Kubectl::new(&sim);
    let apply = |yaml: String, extra: &'static [&'static str]| {
        let k = &k;
        async move {
            let mut args = vec!["apply", "--server-side", "-f", "-"];
            args.extend_from_slice(extra);
            k.run_stdin(&args, Some(&yaml)).await
        }
    };
    let out = apply(APPLIED.to_string(), &[]).await;
    assert!(out.ok, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("kustomization.kustomize.toolkit.fluxcd.io/applied serverside-applied"),
        "{}",
        out.stdout
    );
    let obj = get(&sim, KS, "Kustomization", "flux-system", "applied").unwrap();
    assert_eq!(obj["metadata"]["generation"], 1);
    let managers: Vec<&str> = obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(managers.contains(&"kubectl"), "{managers:?}");

    // Another manager takes spec.interval; re-applying a different value conflicts.
    k.ok(&[
        "patch",
        "ks",
        "applied",
        "-n",
        "flux-system",
        "--type=merge",
        "-p",
        r#"{"spec":{"interval":"7m"}}"#,
    ])
    .await;
    let out = apply(APPLIED.replace("interval: 5m", "interval: 9m"), &[]).await;
    assert!(!out.ok);
    assert!(
        out.stderr.contains(r#"conflict with "kubectl-patch""#)
            && out.stderr.contains(".spec.interval"),
        "{}",
        out.stderr
    );
    assert_eq!(
        get(&sim, KS, "Kustomization", "flux-system", "applied").unwrap()["spec"]["interval"],
        "7m"
    );
    let out = apply(
        APPLIED.replace("interval: 5m", "interval: 9m"),
        &["--force-conflicts"],
    )
    .await;
    assert!(out.ok, "{}", out.stderr);
    let obj = get(&sim, KS, "Kustomization", "flux-system", "applied").unwrap();
    assert_eq!(obj["spec"]["interval"], "9m");
    assert_eq!(obj["metadata"]["generation"], 3);

    // Fields dropped from the applied configuration are removed.
    let out = apply(
        APPLIED.replace("  prune: true\n", "  prune: true\n  suspend: true\n"),
        &["--force-conflicts"],
    )
    .await;
    assert!(out.ok, "{}", out.stderr);
    assert_eq!(
        get(&sim, KS, "Kustomization", "flux-system", "applied").unwrap()["spec"]["suspend"],
        true
    );
    let out = apply(APPLIED.to_string(), &["--force-conflicts"]).await;
    assert!(out.ok, "{}", out.stderr);
    assert!(
        get(&sim, KS, "Kustomization", "flux-system", "applied").unwrap()["spec"]
            .get("suspend")
            .is_none()
    );

    // kubectl validates strictly by default (fieldValidation=Strict): a typo fails.
    let out = apply(
        APPLIED.replace("  prune: true\n", "  prune: true\n  suspnd: true\n"),
        &[],
    )
    .await;
    assert!(!out.ok);
    assert!(
        out.stderr
            .contains(r#"strict decoding error: unknown field "spec.suspnd""#),
        "{}",
        out.stderr
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn watch_sees_a_change_and_delete() {
    let sim = start_default().await;
    sim.seed_fleet(3).await.unwrap();
    let k = Kubectl::new(&sim);
    let mut cmd = k.command(&[
        "get",
        "ks",
        "infra-000",
        "-n",
        "flux-system",
        "--watch",
        "--no-headers",
        "-o",
        "custom-columns=NAME:.metadata.name,SUSPEND:.spec.suspend",
    ]);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("initial row")
        .unwrap()
        .unwrap();
    assert!(first.starts_with("infra-000"), "{first}");
    assert!(!first.contains("true"), "{first}");

    k.ok(&[
        "patch",
        "ks",
        "infra-000",
        "-n",
        "flux-system",
        "--type=merge",
        "-p",
        r#"{"spec":{"suspend":true}}"#,
    ])
    .await;
    let changed = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match lines.next_line().await {
                Ok(Some(l)) if l.contains("true") => return l,
                Ok(Some(_)) => continue,
                other => panic!("watch ended: {other:?}"),
            }
        }
    })
    .await
    .expect("watch shows the change");
    assert!(changed.starts_with("infra-000"));
    child.kill().await.ok();

    let out = k
        .ok(&["delete", "ks", "infra-000", "-n", "flux-system"])
        .await;
    assert!(
        out.contains(r#"kustomization.kustomize.toolkit.fluxcd.io "infra-000" deleted"#),
        "{out}"
    );
    assert!(get(&sim, KS, "Kustomization", "flux-system", "infra-000").is_none());
    sim.shutdown().await;
}

#[tokio::test]
async fn invalid_object_is_rejected_with_field_paths() {
    let sim = start_default().await;
    let k = Kubectl::new(&sim);
    let bad = r#"
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: bad, namespace: default}
spec: {interval: 5, prune: true, sourceRef: {kind: Foo, name: x}}
"#;
    let out = k.run_stdin(&["create", "-f", "-"], Some(bad)).await;
    out.assert_fails_with(r#"The Kustomization "bad" is invalid"#);
    assert!(out.stderr.contains(r#"spec.interval: Invalid value: "integer": spec.interval in body must be of type string: "integer""#), "{}", out.stderr);
    assert!(
        out.stderr
            .contains(r#"spec.sourceRef.kind: Unsupported value: "Foo""#),
        "{}",
        out.stderr
    );
    assert!(get(&sim, KS, "Kustomization", "default", "bad").is_none());

    let out = k
        .run_stdin(
            &["create", "-f", "-"],
            Some(
                &bad.replace("default", "nowhere")
                    .replace("interval: 5", "interval: 5m")
                    .replace("Foo", "GitRepository"),
            ),
        )
        .await;
    out.assert_fails_with(r#"namespaces "nowhere" not found"#);
    sim.shutdown().await;
}

#[tokio::test]
async fn imperative_create_of_builtin_kinds_sends_protobuf() {
    let sim = start_default().await;
    let k = Kubectl::new(&sim);
    k.ok(&["create", "namespace", "team-x"]).await;
    k.ok(&[
        "-n",
        "team-x",
        "create",
        "configmap",
        "cfg",
        "--from-literal=a=b",
    ])
    .await;
    k.ok(&[
        "-n",
        "team-x",
        "create",
        "secret",
        "generic",
        "tok",
        "--from-literal=token=s3cr3t",
    ])
    .await;
    k.ok(&["-n", "team-x", "create", "serviceaccount", "spoke"])
        .await;
    k.ok(&[
        "-n",
        "team-x",
        "create",
        "role",
        "r",
        "--verb=get,patch",
        "--resource=kustomizations.kustomize.toolkit.fluxcd.io",
    ])
    .await;
    k.ok(&[
        "-n",
        "team-x",
        "create",
        "rolebinding",
        "rb",
        "--role=r",
        "--serviceaccount=team-x:spoke",
    ])
    .await;

    assert_eq!(
        get(&sim, "v1", "Namespace", "", "team-x").unwrap()["status"]["phase"],
        "Active"
    );
    assert_eq!(
        get(&sim, "v1", "ConfigMap", "team-x", "cfg").unwrap()["data"]["a"],
        "b"
    );
    let ns = k.ok(&["get", "namespace", "team-x", "--no-headers"]).await;
    assert_eq!(
        ns.split_whitespace().take(2).collect::<Vec<_>>(),
        ["team-x", "Active"],
        "{ns}"
    );
    let cm = k
        .ok(&["get", "configmap", "cfg", "-n", "team-x", "--no-headers"])
        .await;
    assert_eq!(
        cm.split_whitespace().take(2).collect::<Vec<_>>(),
        ["cfg", "1"],
        "{cm}"
    );
    assert_eq!(
        get(&sim, "v1", "Secret", "team-x", "tok").unwrap()["data"]["token"],
        "czNjcjN0"
    );
    assert!(get(&sim, "v1", "ServiceAccount", "team-x", "spoke").is_some());
    let role = get(&sim, "rbac.authorization.k8s.io/v1", "Role", "team-x", "r").unwrap();
    assert_eq!(
        role["rules"][0]["verbs"],
        serde_json::json!(["get", "patch"])
    );
    assert_eq!(
        role["rules"][0]["apiGroups"],
        serde_json::json!(["kustomize.toolkit.fluxcd.io"])
    );
    let rb = get(
        &sim,
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "team-x",
        "rb",
    )
    .unwrap();
    assert_eq!(
        rb["subjects"][0],
        serde_json::json!({"kind": "ServiceAccount", "name": "spoke", "namespace": "team-x"})
    );
    assert_eq!(rb["roleRef"]["name"], "r");
    sim.shutdown().await;
}

#[tokio::test]
async fn recorder_events_show_in_describe_and_get_events() {
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let sim = start_default().await;
    sim.seed_fleet(3).await.unwrap();
    let client = common::client(&sim).await;
    let recorder = Recorder::new(
        client,
        Reporter {
            controller: "fleetgate-spoke".into(),
            instance: Some("spoke-0".into()),
        },
    );
    let obj = get(&sim, KS, "Kustomization", "flux-system", "infra-000").unwrap();
    let reference = k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some(KS.into()),
        kind: Some("Kustomization".into()),
        name: Some("infra-000".into()),
        namespace: Some("flux-system".into()),
        uid: obj["metadata"]["uid"].as_str().map(String::from),
        ..Default::default()
    };
    let event = Event {
        type_: EventType::Normal,
        reason: "GateClosed".into(),
        note: Some("suspended by gate no-deploy-friday".into()),
        action: "Suspend".into(),
        secondary: None,
    };
    recorder.publish(&event, &reference).await.unwrap();
    // A repeat is patched into the same Event (series), not created again.
    recorder.publish(&event, &reference).await.unwrap();

    let k = Kubectl::new(&sim);
    let described = k
        .ok(&["describe", "ks", "infra-000", "-n", "flux-system"])
        .await;
    let events = described.split("Events:").nth(1).unwrap_or_default();
    assert!(
        events.contains("GateClosed") && events.contains("suspended by gate no-deploy-friday"),
        "{described}"
    );
    let listed = k
        .ok(&["get", "events", "-n", "flux-system", "-o", "name"])
        .await;
    assert_eq!(listed.lines().count(), 1, "{listed}");
    let table = k.ok(&["get", "events", "-n", "flux-system"]).await;
    let mut lines = table.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{table}"
    );
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        &row[1..4],
        ["Normal", "GateClosed", "kustomization/infra-000"],
        "{table}"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn api_resources_and_explain_use_discovery_and_openapi_v3() {
    let sim = start_default().await;
    let k = Kubectl::new(&sim);
    let resources = k
        .ok(&["api-resources", "--api-group=source.toolkit.fluxcd.io"])
        .await;
    for (plural, short) in [
        ("gitrepositories", "gitrepo"),
        ("ocirepositories", "ocirepo"),
        ("helmrepositories", "helmrepo"),
        ("helmcharts", "hc"),
    ] {
        let line = resources
            .lines()
            .find(|l| l.starts_with(plural))
            .unwrap_or_default();
        assert!(line.contains(short), "{plural}: {resources}");
    }
    let explained = k.ok(&["explain", "kustomization.spec.suspend"]).await;
    assert!(
        explained.contains("FIELD: suspend <boolean>"),
        "{explained}"
    );
    assert!(
        explained
            .contains("This flag tells the controller to suspend subsequent kustomize executions"),
        "{explained}"
    );
    sim.shutdown().await;
}
