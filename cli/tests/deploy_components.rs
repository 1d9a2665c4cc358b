//! The spoke's optional kustomize components (`deploy/spoke/components/`), each rendered
//! with the real `kubectl kustomize` through an overlay that adds it to deploy/spoke:
//! `hold-objects` grants exactly the held kinds, `flux-events` sets only the events
//! address, `projected-token` replaces the token Secret with a projected token.

mod render;

use std::collections::BTreeSet;

use render::{copy_dir, find, grants, kinds, render, repo};
use serde_json::Value;

/// The spoke's manifests rendered through an overlay that adds one of its
/// components (`deploy/spoke/components/<component>`).
fn render_spoke_with_component(component: &str) -> Vec<Value> {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("deploy/spoke"), &tmp.path().join("spoke"));
    let overlay = tmp.path().join("overlay");
    std::fs::create_dir(&overlay).unwrap();
    std::fs::write(
        overlay.join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../spoke]\ncomponents: [../spoke/components/{component}]\n"
        ),
    )
    .unwrap();
    render(&overlay)
}

/// The `hold-objects` component grants list/watch/get/patch on exactly the
/// kinds it enables with FLEETGATE_HELD_KINDS, nothing cluster-wide beyond.
#[test]
fn hold_objects_component_grants_exactly_the_held_kinds() {
    let objs = render_spoke_with_component("hold-objects");
    let deploy = find(&objs, "Deployment", "fleetgate-spoke");
    let env = deploy["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap();
    let held = env
        .iter()
        .find(|e| e["name"] == "FLEETGATE_HELD_KINDS")
        .and_then(|e| e["value"].as_str())
        .expect("FLEETGATE_HELD_KINDS set");
    let mut want = BTreeSet::new();
    for kind in held.split(',') {
        let parts: Vec<&str> = kind.split('/').collect();
        let (group, kind) = match parts.as_slice() {
            [_, k] => ("", *k),
            [g, _, k] => (*g, *k),
            _ => panic!("bad held kind {kind}"),
        };
        for v in ["get", "list", "watch", "patch"] {
            want.insert((
                group.to_string(),
                format!("{}s", kind.to_lowercase()),
                v.to_string(),
            ));
        }
    }
    let cr = find(&objs, "ClusterRole", "fleetgate-spoke-held-objects");
    assert_eq!(grants(cr), want);
    let binding = find(&objs, "ClusterRoleBinding", "fleetgate-spoke-held-objects");
    assert_eq!(binding["subjects"][0]["name"], "fleetgate-spoke");
    assert_eq!(binding["subjects"][0]["namespace"], "fleetgate-system");
}

/// The `flux-events` component points the spoke at Flux's notification-controller
/// (`--events-addr`) and grants nothing (a plain HTTP POST inside the cluster).
#[test]
fn flux_events_component_sets_the_events_address_only() {
    let objs = render_spoke_with_component("flux-events");
    let plain = render(&repo().join("deploy/spoke"));
    assert_eq!(kinds(&objs), kinds(&plain));
    assert_eq!(objs.len(), plain.len());
    let deploy = find(&objs, "Deployment", "fleetgate-spoke");
    let env = deploy["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap();
    let addr = env
        .iter()
        .find(|e| e["name"] == "FLEETGATE_EVENTS_ADDR")
        .and_then(|e| e["value"].as_str())
        .expect("FLEETGATE_EVENTS_ADDR set");
    assert_eq!(
        addr,
        "http://notification-controller.flux-system.svc.cluster.local./"
    );
    // The rest of the spoke's environment is kept.
    assert!(env.iter().any(|e| e["name"] == "FLEETGATE_CLUSTER"));
}

/// The `projected-token` component: the spoke signs in with a projected ServiceAccount
/// token (audience = the hub's default `--spoke-audience`, an hour at most) in place of the
/// token Secret, read from the same file; nothing else changes and no Secret is referenced.
#[test]
fn projected_token_component_replaces_the_secret_with_a_projected_token() {
    let objs = render_spoke_with_component("projected-token");
    let plain = render(&repo().join("deploy/spoke"));
    assert_eq!(kinds(&objs), kinds(&plain));
    assert!(!kinds(&objs).contains("Secret"));
    let deploy = find(&objs, "Deployment", "fleetgate-spoke");
    let pod = &deploy["spec"]["template"]["spec"];
    let volumes = pod["volumes"].as_array().unwrap();
    assert_eq!(volumes.len(), 1);
    assert!(volumes[0].get("secret").is_none(), "{volumes:?}");
    let sat = &volumes[0]["projected"]["sources"][0]["serviceAccountToken"];
    assert_eq!(sat["audience"], "fleetgate");
    let ttl = sat["expirationSeconds"].as_i64().unwrap();
    assert!((600..=3600).contains(&ttl), "{ttl}");
    let mount = &pod["containers"][0]["volumeMounts"][0];
    assert_eq!(mount["name"], volumes[0]["name"]);
    let file = format!(
        "{}/{}",
        mount["mountPath"].as_str().unwrap(),
        sat["path"].as_str().unwrap()
    );
    let env = pod["containers"][0]["env"].as_array().unwrap();
    let token_file = env
        .iter()
        .find(|e| e["name"] == "FLEETGATE_SPOKE_TOKEN_FILE")
        .unwrap();
    assert_eq!(token_file["value"], file.as_str());
    assert_eq!(pod["serviceAccountName"], "fleetgate-spoke");
    // The Flux example without SOPS uses it.
    let example = render(&repo().join("deploy/flux/clusters/dev-eks-1"));
    let ks = find(&example, "Kustomization", "fleetgate-spoke");
    assert_eq!(
        ks["spec"]["components"],
        serde_json::json!(["./components/projected-token"])
    );
}
