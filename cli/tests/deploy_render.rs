//! `kubectl kustomize` renders every overlay in deploy/, the objects have the
//! expected kinds and hardening, the spoke's ClusterRole grants exactly the
//! verbs the spoke uses, and each cluster's Flux patch applies to deploy/spoke.
//! The spoke's optional components: `deploy_components.rs`.

mod render;

use std::collections::BTreeSet;
use std::process::Command;

use render::{copy_dir, find, grants, kinds, render, repo, strs};
use serde_json::Value;

fn assert_hardened(deploy: &Value) {
    let pod = &deploy["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    for c in pod["containers"].as_array().unwrap() {
        let sc = &c["securityContext"];
        assert_eq!(sc["readOnlyRootFilesystem"], true, "{c:?}");
        assert_eq!(sc["allowPrivilegeEscalation"], false);
        assert_eq!(
            strs(&sc["capabilities"]["drop"]),
            BTreeSet::from(["ALL".into()])
        );
        assert!(c["resources"]["requests"]["memory"].is_string());
        assert!(c["resources"]["limits"]["memory"].is_string());
        assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
        assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    }
}

#[test]
fn hub_renders_two_hardened_replicas_with_secret_refs() {
    let objs = render(&repo().join("deploy/hub"));
    assert_eq!(
        kinds(&objs),
        [
            "Deployment",
            "Namespace",
            "PodDisruptionBudget",
            "Service",
            "ServiceAccount"
        ]
        .map(String::from)
        .into()
    );
    let d = find(&objs, "Deployment", "fleetgate-hub");
    assert_eq!(d["spec"]["replicas"], 2);
    assert_hardened(d);
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert!(
        c["image"]
            .as_str()
            .unwrap()
            .starts_with("ghcr.io/fleetgate/fleetgate-hub:"),
        "{:?}",
        c["image"]
    );
    let env = c["env"].as_array().unwrap();
    for (var, key) in [
        ("DATABASE_URL", "database-url"),
        ("FLEETGATE_ADMIN_TOKEN", "admin-token"),
    ] {
        let e = env.iter().find(|e| e["name"] == var).unwrap();
        assert_eq!(e["valueFrom"]["secretKeyRef"]["name"], "fleetgate-hub");
        assert_eq!(e["valueFrom"]["secretKeyRef"]["key"], key);
    }
    let svc = find(&objs, "Service", "fleetgate-hub");
    let ports: BTreeSet<(String, i64)> = svc["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().into(),
                p["port"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ports, [("grpc".into(), 9090), ("http".into(), 8080)].into());
    // Every namespaced object lands in the hub's namespace.
    for o in objs.iter().filter(|o| o["kind"] != "Namespace") {
        assert_eq!(o["metadata"]["namespace"], "fleetgate", "{:?}", o["kind"]);
    }
    // The CloudNativePG example is documentation, not part of the overlay.
    assert!(!kinds(&objs).contains("Cluster"));
    assert!(repo().join("deploy/hub/postgres-cnpg.yaml").exists());
}

#[test]
fn spoke_cluster_role_grants_exactly_what_the_spoke_uses() {
    let objs = render(&repo().join("deploy/spoke"));
    assert_eq!(
        kinds(&objs),
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "CustomResourceDefinition",
            "Deployment",
            "Namespace",
            "Role",
            "RoleBinding",
            "Service",
            "ServiceAccount"
        ]
        .map(String::from)
        .into()
    );
    let flux = [
        ("kustomize.toolkit.fluxcd.io", "kustomizations"),
        ("helm.toolkit.fluxcd.io", "helmreleases"),
        ("source.toolkit.fluxcd.io", "gitrepositories"),
        ("source.toolkit.fluxcd.io", "ocirepositories"),
        ("source.toolkit.fluxcd.io", "helmrepositories"),
        ("source.toolkit.fluxcd.io", "buckets"),
        ("source.toolkit.fluxcd.io", "helmcharts"),
        ("image.toolkit.fluxcd.io", "imageupdateautomations"),
    ];
    let mut want = BTreeSet::new();
    for (g, r) in flux {
        for v in ["get", "list", "watch", "patch"] {
            want.insert((g.to_string(), r.to_string(), v.to_string()));
        }
    }
    for v in ["create", "patch"] {
        want.insert(("events.k8s.io".into(), "events".into(), v.into()));
    }
    for v in ["get", "list", "watch", "create", "update", "delete"] {
        want.insert(("fleetgate.io".into(), "gates".into(), v.into()));
    }
    want.insert(("fleetgate.io".into(), "gates/status".into(), "patch".into()));
    let cr = find(&objs, "ClusterRole", "fleetgate-spoke");
    assert_eq!(grants(cr), want);

    // In its own namespace: the snapshot ConfigMap and its shards, pinned by
    // name except for create and list (RBAC restricts neither by name), and
    // the in-cluster freeze ConfigMap, read-only and pinned by name
    // (docs/emergency-stop.md).
    let role = find(&objs, "Role", "fleetgate-spoke");
    assert_eq!(role["metadata"]["namespace"], "fleetgate-system");
    let rules = role["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 4);
    // Every shard name the spoke can write: two sets of SNAPSHOT_MAX_SHARDS.
    let shard_names: BTreeSet<String> = ["a", "b"]
        .iter()
        .flat_map(|slot| {
            (0..fleetgate_policy::budgets::SNAPSHOT_MAX_SHARDS)
                .map(move |i| format!("fleetgate-spoke-snapshot-{slot}-{i}"))
        })
        .collect();
    let shards = rules
        .iter()
        .find(|r| strs(&r["resourceNames"]) == shard_names)
        .expect("a Role rule pinned to every shard name");
    assert_eq!(
        strs(&shards["verbs"]),
        ["get", "patch", "delete"].map(String::from).into()
    );
    let pinned = |name: &str| {
        rules
            .iter()
            .find(|r| strs(&r["resourceNames"]) == [name.to_string()].into())
            .unwrap_or_else(|| panic!("no Role rule pinned to {name}"))
    };
    let snapshot = pinned("fleetgate-spoke-snapshot");
    assert_eq!(
        strs(&snapshot["verbs"]),
        ["get", "patch"].map(String::from).into()
    );
    assert_eq!(strs(&snapshot["resources"]), ["configmaps".into()].into());
    let freeze = pinned("fleetgate-freeze");
    assert_eq!(
        strs(&freeze["verbs"]),
        ["get", "list", "watch"].map(String::from).into()
    );
    assert_eq!(strs(&freeze["resources"]), ["configmaps".into()].into());
    let create = rules.iter().find(|r| r["resourceNames"].is_null()).unwrap();
    assert_eq!(
        strs(&create["verbs"]),
        ["create", "list"].map(String::from).into()
    );
    assert_eq!(strs(&create["resources"]), ["configmaps".into()].into());

    for binding in ["ClusterRoleBinding", "RoleBinding"] {
        let b = find(&objs, binding, "fleetgate-spoke");
        assert_eq!(b["subjects"][0]["name"], "fleetgate-spoke");
        assert_eq!(b["subjects"][0]["namespace"], "fleetgate-system");
    }
    let d = find(&objs, "Deployment", "fleetgate-spoke");
    assert_eq!(d["metadata"]["namespace"], "fleetgate-system");
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(
        d["spec"]["template"]["spec"]["serviceAccountName"],
        "fleetgate-spoke"
    );
    assert_hardened(d);
}

/// Applies a Flux Kustomization's `spec.patches` to a copy of deploy/spoke
/// with kubectl kustomize, as kustomize-controller would.
fn render_with_flux_patches(flux_ks: &Value) -> Vec<Value> {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("deploy/spoke"), &tmp.path().join("spoke"));
    let overlay = tmp.path().join("overlay");
    std::fs::create_dir(&overlay).unwrap();
    let ks = fleetgate_policy::yaml::to_string(&fleetgate_policy::yaml::from_str::<Value>(&format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../spoke]\npatches: {}",
        serde_json::to_string(&flux_ks["spec"]["patches"]).unwrap()
    ))
    .unwrap())
    .unwrap();
    std::fs::write(overlay.join("kustomization.yaml"), ks).unwrap();
    render(&overlay)
}

#[test]
fn every_cluster_in_the_flux_layout_gets_a_patched_spoke() {
    let clusters = repo().join("deploy/flux/clusters");
    let mut seen = 0;
    for entry in std::fs::read_dir(&clusters).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let objs = render(&dir);
        assert_eq!(
            kinds(&objs),
            ["GitRepository", "Kustomization"].map(String::from).into()
        );
        let ks = find(&objs, "Kustomization", "fleetgate-spoke");
        // Gates never hold the spoke's own delivery; the name is the spoke's
        // --own-kustomization default, so it warns if a gate would.
        for obj in [ks, find(&objs, "GitRepository", "fleetgate")] {
            assert_eq!(
                obj["metadata"]["annotations"]["fleetgate.io/ignore"], "true",
                "{name}"
            );
        }
        assert_eq!(ks["metadata"]["namespace"], "flux-system");
        assert_eq!(
            fleetgate_spoke::config::Config::for_cluster("x")
                .unwrap()
                .own_kustomization,
            "flux-system/fleetgate-spoke"
        );
        assert_eq!(ks["spec"]["path"], "./deploy/spoke");
        assert_eq!(ks["spec"]["sourceRef"]["name"], "fleetgate");
        let rendered = render_with_flux_patches(ks);
        let d = find(&rendered, "Deployment", "fleetgate-spoke");
        let env = d["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap();
        let get = |n: &str| env.iter().find(|e| e["name"] == n).unwrap()["value"].clone();
        assert_eq!(
            get("FLEETGATE_CLUSTER"),
            Value::from(name.as_str()),
            "{name}"
        );
        assert!(
            get("FLEETGATE_HUB_URL")
                .as_str()
                .unwrap()
                .starts_with("https://")
        );
        // The patch merged into the base: downward-API env still present.
        assert!(env.iter().any(|e| e["name"] == "POD_NAMESPACE"));
        seen += 1;
    }
    assert!(seen >= 2, "expected at least two example clusters");
}

/// No container runtime here, so the Dockerfiles are checked statically:
/// the binary they build exists in the workspace, the runtime stage is the
/// non-root distroless image, and the uid matches the manifests' runAsUser.
#[test]
fn dockerfiles_build_existing_binaries_into_a_non_root_runtime() {
    let meta = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(repo())
        .output()
        .expect("cargo metadata");
    assert!(
        meta.status.success(),
        "{}",
        String::from_utf8_lossy(&meta.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&meta.stdout).unwrap();
    let bins: BTreeSet<String> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter())
        .filter(|t| t["kind"].as_array().unwrap().iter().any(|k| k == "bin"))
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    for (file, bin, profile, deploy) in [
        ("Dockerfile.hub", "fleetgate-hub", "dist", "deploy/hub"),
        (
            "Dockerfile.spoke",
            "fleetgate-spoke",
            "dist-spoke",
            "deploy/spoke",
        ),
    ] {
        assert!(bins.contains(bin), "{bin} is a workspace binary");
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
        assert_eq!(
            froms,
            [
                "FROM rust:1-bookworm AS build",
                "FROM gcr.io/distroless/cc-debian12:nonroot"
            ],
            "{file}"
        );
        assert!(
            text.contains(&format!(
                "cargo build --profile {profile} --locked --bin {bin}"
            )) && text.contains(&format!("cp target/{profile}/{bin} ")),
            "{file}"
        );
        assert!(
            text.contains(&format!("ENTRYPOINT [\"/usr/local/bin/{bin}\"]")),
            "{file}"
        );
        assert!(text.contains("\nUSER 65532:65532\n"), "{file}");
        // Version and commit: the commit reaches the build (no .git in the
        // context) and both label the image (OCI annotations).
        for line in [
            "ENV FLEETGATE_COMMIT=${FLEETGATE_COMMIT}",
            "org.opencontainers.image.version=\"${FLEETGATE_VERSION}\"",
            "org.opencontainers.image.revision=\"${FLEETGATE_COMMIT}\"",
        ] {
            assert!(text.contains(line), "{file}: {line}");
        }
        let runtime = &text[text.find("FROM gcr.io").unwrap()..];
        for arg in ["ARG FLEETGATE_VERSION", "ARG FLEETGATE_COMMIT"] {
            assert!(runtime.contains(arg), "{file}: {arg} in the runtime stage");
        }
        let objs = render(&repo().join(deploy));
        let d = objs.iter().find(|o| o["kind"] == "Deployment").unwrap();
        assert_eq!(
            d["spec"]["template"]["spec"]["securityContext"]["runAsUser"],
            65532
        );
    }
    let ignore = std::fs::read_to_string(repo().join(".dockerignore")).unwrap();
    assert!(
        ignore.lines().any(|l| l.trim() == "target/"),
        "build output stays out of the context"
    );
}

/// deploy/standalone: the same spoke without hub URL, token or its Secret
/// volume, in standalone mode; the Service answers Flagger on the http port.
#[test]
fn standalone_overlay_needs_no_hub_and_no_token() {
    let objs = render(&repo().join("deploy/standalone"));
    let d = find(&objs, "Deployment", "fleetgate-spoke");
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    let env: BTreeSet<(String, String)> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| Some((e["name"].as_str()?.into(), e["value"].as_str()?.into())))
        .collect();
    assert!(
        env.contains(&("FLEETGATE_STANDALONE".into(), "true".into())),
        "{env:?}"
    );
    assert!(
        env.iter()
            .all(|(n, _)| n != "FLEETGATE_HUB_URL" && n != "FLEETGATE_SPOKE_TOKEN_FILE"),
        "{env:?}"
    );
    let vols = &d["spec"]["template"]["spec"]["volumes"];
    assert!(
        vols.is_null() || vols.as_array().is_some_and(|v| v.is_empty()),
        "{vols:?}"
    );
    assert_hardened(d);
    let svc = find(&objs, "Service", "fleetgate-spoke");
    assert_eq!(svc["metadata"]["namespace"], "fleetgate-system");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], "http");
    assert!(kinds(&objs).contains("CustomResourceDefinition"));
}

/// deploy/monitoring: the alert rules render as one PrometheusRule beside the
/// hub, with a hub group and a spoke group (the metrics each rule names are
/// checked against the code by the docs checks, `cli/tests/docs`).
#[test]
fn monitoring_renders_the_alert_rules() {
    let objs = render(&repo().join("deploy/monitoring"));
    assert_eq!(objs.len(), 1, "{objs:?}");
    let rule = find(&objs, "PrometheusRule", "fleetgate");
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(rule["metadata"]["namespace"], "fleetgate");
    let groups: BTreeSet<&str> = rule["spec"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert_eq!(groups, BTreeSet::from(["fleetgate-hub", "fleetgate-spoke"]));
}

/// One version, pinned in one place per image: `deploy/hub` and `deploy/spoke`
/// (and so `deploy/standalone` and every Flux example built on them) name the
/// images of this release through kustomize `images:`, and the Flux examples
/// fetch the manifests of the same release tag.
#[test]
fn manifests_pin_this_release() {
    let version = env!("CARGO_PKG_VERSION");
    for (dir, image) in [
        ("deploy/hub", "ghcr.io/fleetgate/fleetgate-hub"),
        ("deploy/spoke", "ghcr.io/fleetgate/fleetgate-spoke"),
        ("deploy/standalone", "ghcr.io/fleetgate/fleetgate-spoke"),
    ] {
        let objs = render(&repo().join(dir));
        let d = objs.iter().find(|o| o["kind"] == "Deployment").unwrap();
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["image"],
            format!("{image}:{version}"),
            "{dir}"
        );
    }
    let clusters = repo().join("deploy/flux/clusters");
    let mut seen = 0;
    for entry in std::fs::read_dir(&clusters).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path().join("fleetgate-spoke.yaml")).unwrap();
        assert!(
            text.contains(&format!("tag: v{version}\n")),
            "{}: the GitRepository's ref.tag is v{version}",
            entry.path().display()
        );
        seen += 1;
    }
    assert!(seen >= 2);
}
