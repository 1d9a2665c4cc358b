//! The simulator with the RBAC of `deploy/spoke/` and a client holding the spoke
//! ServiceAccount's token (the spoke's least-privilege tests).

use std::{path::Path, time::Duration};

use fleetgate_sim::{RbacConfig, RbacUser, Sim, SimConfig, parse_manifests};
use kube::api::Api;

use super::{CLUSTER, Cluster, SPOKE_NS, client_for, create, git_repository, kustomization};

pub const SPOKE_TOKEN: &str = "spoke-sa-token";

pub const ALL_RBAC: [&str; 4] = [
    "clusterrole.yaml",
    "clusterrolebinding.yaml",
    "role.yaml",
    "rolebinding.yaml",
];

pub fn deploy_rbac(files: &[&str]) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/spoke");
    let mut out = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        for mut obj in parse_manifests(&text).unwrap() {
            // kustomize sets the namespace of the namespaced ones.
            if matches!(obj["kind"].as_str(), Some("Role" | "RoleBinding")) {
                obj["metadata"]["namespace"] = SPOKE_NS.into();
            }
            out.push(obj.to_string());
        }
    }
    out
}

/// A simulator with RBAC from `deploy/spoke/` (`files`), seeded with `repo`
/// and `apps`, and a client holding the spoke ServiceAccount's token.
pub async fn cluster_with_rbac(files: &[&str]) -> (Cluster, kube::Client) {
    let rbac = RbacConfig {
        tokens: [(
            SPOKE_TOKEN.to_owned(),
            RbacUser::service_account(SPOKE_NS, "fleetgate-spoke"),
        )]
        .into(),
        manifests: deploy_rbac(files),
        ..RbacConfig::default()
    };
    let admin_token = rbac.admin_token.clone();
    let sim = Sim::start(SimConfig {
        clusters: vec![CLUSTER.into()],
        reconcile_interval: Some(Duration::from_millis(200)),
        rbac: Some(rbac),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let cluster = Cluster {
        client: client_for(&sim).await,
        sim,
    };
    // (The simulator creates the namespaces of what it seeds.)
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;

    // The spoke's own client: the same server, the ServiceAccount's token.
    let yaml = cluster.sim.kubeconfig_yaml(CLUSTER).unwrap();
    assert!(yaml.contains(&admin_token));
    let spoke_client = fleetgate_tests::kube_client(&yaml.replace(&admin_token, SPOKE_TOKEN)).await;
    // Sanity: the token really is restricted.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(spoke_client.clone(), SPOKE_NS);
    assert!(
        matches!(secrets.list(&Default::default()).await, Err(kube::Error::Api(s)) if s.code == 403)
    );
    (cluster, spoke_client)
}
