//! CustomResourceDefinitions through the real kubectl: the install paths users run
//! (`kubectl apply -k deploy/standalone`, `deploy/spoke`, client- and server-side, twice)
//! against a fresh cluster with validation on; `get crd`, `explain`, printer columns;
//! a CRD applied at run time served at once (validation, pruning, columns, short names,
//! status subresource), a naming conflict, and deleting a CRD deleting its objects.

mod common;

use common::{Kubectl, start_default};
use serde_json::Value;

fn repo(path: &str) -> String {
    format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"))
}

fn header(table: &str) -> Vec<String> {
    table
        .lines()
        .next()
        .unwrap_or_default()
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect()
}

/// Applies `dir` twice client-side (as the quick start does) and twice server-side (as
/// Flux's kustomize-controller does) to a fresh cluster; the second run of each changes
/// nothing, and the seeded Gate CRD is configured, not in conflict.
async fn apply_twice_both_ways(k: &Kubectl, dir: &str) {
    let first = k.ok(&["apply", "-k", dir]).await;
    assert!(
        first.contains("customresourcedefinition.apiextensions.k8s.io/gates.fleetgate.io"),
        "{first}"
    );
    assert!(
        first.contains("deployment.apps/fleetgate-spoke created"),
        "{first}"
    );
    let second = k.ok(&["apply", "-k", dir]).await;
    for line in second.lines() {
        assert!(
            line.ends_with(" unchanged"),
            "second apply changed {line:?}:\n{second}"
        );
    }
    for _ in 0..2 {
        let out = k
            .ok(&[
                "apply",
                "--server-side",
                "--field-manager=kustomize-controller",
                "-k",
                dir,
            ])
            .await;
        assert!(
            out.contains("gates.fleetgate.io serverside-applied"),
            "{out}"
        );
    }
}

#[tokio::test]
async fn deploy_kustomizations_apply_cleanly_twice() {
    let spoke_only = start_default().await;
    apply_twice_both_ways(&Kubectl::new(&spoke_only), &repo("deploy/spoke")).await;
    spoke_only.shutdown().await;

    let sim = start_default().await;
    let k = Kubectl::new(&sim);
    apply_twice_both_ways(&k, &repo("deploy/standalone")).await;
    let crd: Value = serde_json::from_str(
        &k.ok(&["get", "crd", "gates.fleetgate.io", "-o", "json"])
            .await,
    )
    .unwrap();
    assert_eq!(crd["metadata"]["generation"], 1, "the same spec each time");
    assert_eq!(
        crd["metadata"]["labels"]["app.kubernetes.io/part-of"],
        "fleetgate"
    );

    let crds = k.ok(&["get", "crd"]).await;
    assert_eq!(header(&crds), ["NAME", "CREATED AT"], "{crds}");
    for name in [
        "gates.fleetgate.io",
        "kustomizations.kustomize.toolkit.fluxcd.io",
        "helmreleases.helm.toolkit.fluxcd.io",
        "gitrepositories.source.toolkit.fluxcd.io",
        "imageupdateautomations.image.toolkit.fluxcd.io",
    ] {
        assert!(crds.contains(name), "{name} missing:\n{crds}");
    }
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/gates.fleetgate.io",
        "--timeout=5s",
    ])
    .await;
    let explained = k.ok(&["explain", "gate.spec"]).await;
    assert!(explained.contains("KIND:       Gate"), "{explained}");
    assert!(explained.contains("FIELD: spec <Object>"), "{explained}");
    assert!(explained.contains("targets\t<Object>"), "{explained}");

    k.ok(&[
        "apply",
        "-f",
        &repo("examples/in-cluster/sre-approval.yaml"),
    ])
    .await;
    let gates = k.ok(&["get", "gates"]).await;
    assert_eq!(
        header(&gates),
        ["NAME", "OPEN", "REASON", "NEXT", "HELD", "AGE"],
        "{gates}"
    );
    assert!(gates.contains("sre-approval"), "{gates}");
    sim.shutdown().await;
}

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    kind: Widget
    shortNames: [wd]
    categories: [all]
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {}
      additionalPrinterColumns:
        - name: Size
          type: integer
          jsonPath: .spec.size
        - name: Color
          type: string
          jsonPath: .spec.color
        - name: Age
          type: date
          jsonPath: .metadata.creationTimestamp
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [size]
              properties:
                size:
                  type: integer
                  minimum: 1
                color:
                  type: string
                  enum: [red, blue]
            status:
              type: object
              properties:
                phase:
                  type: string
"#;

fn widget(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: default\nspec: {spec}\n"
    )
}

#[tokio::test]
async fn a_crd_applied_at_run_time_is_served_validated_and_deleted_with_its_objects() {
    let sim = start_default().await;
    let k = Kubectl::new(&sim);
    let out = k.run_stdin(&["apply", "-f", "-"], Some(WIDGET_CRD)).await;
    assert!(out.ok, "{}", out.stderr);
    // Established within a second: kubectl waits on the condition (no sleep).
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=1s",
    ])
    .await;
    let crd: Value = serde_json::from_str(
        &k.ok(&["get", "crd", "widgets.example.com", "-o", "json"])
            .await,
    )
    .unwrap();
    let status = &crd["status"];
    assert_eq!(status["acceptedNames"]["listKind"], "WidgetList");
    assert_eq!(status["storedVersions"], serde_json::json!(["v1"]));
    let reasons: Vec<(&str, &str)> = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap(), c["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("NamesAccepted", "NoConflicts"),
            ("Established", "InitialNamesAccepted")
        ]
    );
    assert_eq!(crd["spec"]["conversion"]["strategy"], "None", "defaulted");

    // Validated against its schema: 422 naming the field, nothing stored.
    let bad = k
        .run_stdin(
            &["apply", "-f", "-"],
            Some(&widget("bad", "{size: big, color: green}")),
        )
        .await;
    bad.assert_fails_with("The Widget \"bad\" is invalid");
    assert!(
        bad.stderr.contains(
            "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
        ),
        "{}",
        bad.stderr
    );
    assert!(
        bad.stderr.contains(
            "spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\""
        ),
        "{}",
        bad.stderr
    );
    // Unknown fields: refused under kubectl's strict validation, pruned with a warning.
    let strict = k
        .run_stdin(
            &["apply", "-f", "-"],
            Some(&widget("w1", "{size: 3, colour: red}")),
        )
        .await;
    strict.assert_fails_with("unknown field \"spec.colour\"");
    let warned = k
        .run_stdin(
            &["apply", "--validate=warn", "-f", "-"],
            Some(&widget("w1", "{size: 3, colour: red, color: red}")),
        )
        .await;
    assert!(warned.ok, "{}", warned.stderr);
    assert!(
        warned.stderr.contains("unknown field \"spec.colour\""),
        "{}",
        warned.stderr
    );
    let stored = common::get(&sim, "example.com/v1", "Widget", "default", "w1").unwrap();
    assert_eq!(
        stored["spec"],
        serde_json::json!({"size": 3, "color": "red"})
    );
    assert_eq!(stored["metadata"]["generation"], 1);
    k.run_stdin(&["apply", "-f", "-"], Some(&widget("w2", "{size: 12}")))
        .await;

    // Printer columns, the short name and the category.
    let table = k.ok(&["get", "wd", "-n", "default"]).await;
    assert_eq!(header(&table), ["NAME", "SIZE", "COLOR", "AGE"], "{table}");
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..3], ["w1", "3", "red"], "{table}");
    let all = k.ok(&["get", "all", "-n", "default", "-o", "name"]).await;
    assert!(all.contains("widget.example.com/w1"), "{all}");
    // The status subresource: a main write leaves status alone.
    k.ok(&[
        "patch",
        "widget",
        "w1",
        "-n",
        "default",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Ready"}}"#,
    ])
    .await;
    let phase = k
        .ok(&[
            "get",
            "widget",
            "w1",
            "-n",
            "default",
            "-o",
            "jsonpath={.status.phase}",
        ])
        .await;
    assert_eq!(phase, "Ready");

    // A second CRD claiming the same kind in the group is not accepted, so not served.
    let clash = WIDGET_CRD
        .replace("widgets.example.com", "gadgets.example.com")
        .replace("plural: widgets", "plural: gadgets")
        .replace("shortNames: [wd]", "shortNames: [gd]");
    let out = k.run_stdin(&["apply", "-f", "-"], Some(&clash)).await;
    assert!(out.ok, "{}", out.stderr);
    let accepted = k
        .ok(&[
            "get", "crd", "gadgets.example.com", "-o",
            r#"jsonpath={.status.conditions[?(@.type=="NamesAccepted")].reason}: {.status.conditions[?(@.type=="NamesAccepted")].message}"#,
        ])
        .await;
    assert_eq!(
        accepted,
        "ListKindConflict: \"WidgetList\" is already in use"
    );
    k.run(&["get", "gadgets", "-A"])
        .await
        .assert_fails_with("the server doesn't have a resource type \"gadgets\"");

    // Deleting the CRD deletes its objects, then the type.
    let deleted = k.ok(&["delete", "crd", "widgets.example.com"]).await;
    assert!(deleted.contains("deleted"), "{deleted}");
    assert!(common::get(&sim, "example.com/v1", "Widget", "default", "w1").is_none());
    assert!(common::get(&sim, "example.com/v1", "Widget", "default", "w2").is_none());
    // (kubectl still has the type in its discovery cache: the list itself is a 404.)
    k.run(&["get", "widgets", "-A"])
        .await
        .assert_fails_with("the server could not find the requested resource");
    // The names it freed go to the CRD that waited for them (naming_controller.go
    // requeues the group).
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/gadgets.example.com",
        "--timeout=1s",
    ])
    .await;
    k.ok(&["delete", "crd", "gadgets.example.com"]).await;
    // Created again, it starts empty.
    let out = k.run_stdin(&["apply", "-f", "-"], Some(WIDGET_CRD)).await;
    assert!(out.ok, "{}", out.stderr);
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=1s",
    ])
    .await;
    let none = k.run(&["get", "widgets", "-A"]).await;
    assert!(
        none.ok && none.stdout.is_empty(),
        "{} {}",
        none.stdout,
        none.stderr
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn an_invalid_crd_is_refused_naming_the_field() {
    let sim = start_default().await;
    let k = Kubectl::new(&sim);
    let bad = WIDGET_CRD
        .replace("name: widgets.example.com", "name: widget.example.com")
        .replace(
            "                color:\n                  type: string\n",
            "                color:\n                  description: untyped\n",
        );
    let out = k.run_stdin(&["apply", "-f", "-"], Some(&bad)).await;
    out.assert_fails_with("The CustomResourceDefinition \"widget.example.com\" is invalid");
    assert!(
        out.stderr
            .contains("metadata.name: Invalid value: \"widget.example.com\": must be spec.names.plural+\".\"+spec.group"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[color].type: Required value: must not be empty for specified object fields"),
        "{}",
        out.stderr
    );
    k.run(&["get", "crd", "widget.example.com"])
        .await
        .assert_fails_with("NotFound");
    sim.shutdown().await;
}

/// Flux's own install path: one revision carrying `deploy/spoke` (rendered by kustomize,
/// the seeded Gate CRD included) plus a new CRD and an object of it. The simulated
/// kustomize-controller applies CRDs and namespaces first (ApplyAllStaged), so the object
/// of the new kind applies in the same pass, and a second revision changes nothing.
#[tokio::test]
async fn a_flux_kustomization_applies_crds_with_their_objects() {
    let sim = start_default().await;
    let k = Kubectl::new(&sim);
    let rendered = k.ok(&["kustomize", &repo("deploy/spoke")]).await;
    let bundle = format!(
        "{rendered}\n---\n{WIDGET_CRD}\n---\n{}",
        widget("from-git", "{size: 2, color: blue}")
    );
    for obj in [
        serde_json::json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": "fleetgate", "namespace": "flux-system"},
            "spec": {"interval": "10m", "url": "https://example.com/fleetgate", "ref": {"branch": "main"}}}),
        serde_json::json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "fleetgate", "namespace": "flux-system"},
            "spec": {"interval": "10m", "path": "./deploy", "prune": true,
                "sourceRef": {"kind": "GitRepository", "name": "fleetgate"}}}),
    ] {
        sim.create_object(common::CLUSTER, obj).await.unwrap();
    }
    for n in 1..=2u32 {
        let revision = format!("main@sha1:{n:040x}");
        let manifests = std::collections::BTreeMap::from([("deploy".to_string(), bundle.clone())]);
        sim.push_manifests(
            common::CLUSTER,
            ("GitRepository", "flux-system", "fleetgate"),
            &revision,
            &manifests,
        )
        .await
        .unwrap();
        let ks = common::eventually("the revision applied", || async {
            let ks = common::get(
                &sim,
                "kustomize.toolkit.fluxcd.io/v1",
                "Kustomization",
                "flux-system",
                "fleetgate",
            )?;
            let ready = ks["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Ready")?
                .clone();
            (ks["status"]["lastAttemptedRevision"] == revision.as_str()).then_some((ks, ready))
        })
        .await;
        assert_eq!(ks.1["status"], "True", "{}", ks.1);
        assert_eq!(ks.0["status"]["lastAppliedRevision"], revision.as_str());
    }
    let w = common::get(&sim, "example.com/v1", "Widget", "default", "from-git").unwrap();
    assert_eq!(
        w["metadata"]["generation"], 1,
        "the second revision changed nothing"
    );
    assert_eq!(
        w["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"],
        "fleetgate"
    );
    let gates_crd = k
        .ok(&[
            "get",
            "crd",
            "gates.fleetgate.io",
            "-o",
            "jsonpath={.metadata.generation}",
        ])
        .await;
    assert_eq!(gates_crd, "1");
    assert!(
        k.ok(&["get", "deploy", "-n", "fleetgate-system"])
            .await
            .contains("fleetgate-spoke")
    );
    sim.shutdown().await;
}
