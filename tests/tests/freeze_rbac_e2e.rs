//! A freeze made in the cluster, seen by a spoke that has only the RBAC `deploy/` ships:
//! real `fleetgate-sim` with RBAC on (the manifests applied by the real kubectl), the real
//! `fleetgate-spoke` with its ServiceAccount's token, standalone (`deploy/standalone`) and
//! connected to a real `fleetgate-hub` (`deploy/spoke`). Creating the `fleetgate-freeze`
//! ConfigMap suspends a Kustomization no gate covers, deleting it resumes it, and the
//! spoke's log holds no forbidden request: the Role's `resourceNames: [fleetgate-freeze]`
//! with `list`/`watch` grants the spoke's watch by an exact `metadata.name` field
//! selector, as kube-apiserver does.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use fleetgate_tests::{
    ChildGuard, KUSTOMIZATION, Rest, bin_path, dynamic_api, free_port, hub_serve, kubectl, poll,
    spoke_connect, start_sim_with, test_db,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::json;

const SPOKE_TOKEN: &str = "freeze-rbac-spoke-sa-token";
const ADMIN: &str = "fga_freeze-rbac-e2e-admin-token-0123456789";
const NS: &str = "fleetgate-system";

/// A Kustomization no gate covers (a freeze suspends it all the same).
const PAYMENTS: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: flux-system}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: apps, namespace: flux-system}
spec: {interval: 1m, url: "https://github.com/example/apps", ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: payments, namespace: flux-system}
spec:
  interval: 10m
  path: ./payments
  prune: true
  sourceRef: {kind: GitRepository, name: apps}
"#;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The one cluster with the manifests of `deploy/<flavour>` applied; returns the
/// simulator, the admin kubeconfig and the spoke ServiceAccount's kubeconfig.
async fn cluster(dir: &Path, flavour: &str) -> (ChildGuard, PathBuf, PathBuf) {
    let token_arg = format!("{SPOKE_TOKEN}={NS}/fleetgate-spoke");
    let (sim, clusters) = start_sim_with(dir, 1, &["--service-account-token", &token_arg]).await;
    let admin = clusters[0].kubeconfig.clone();
    let deploy = repo_root().join("deploy").join(flavour);
    let applied = kubectl(&admin, &["apply", "-k", deploy.to_str().unwrap()]);
    assert!(
        applied.contains("role.rbac.authorization.k8s.io/fleetgate-spoke created"),
        "{applied}"
    );
    let payments = dir.join("payments.yaml");
    std::fs::write(&payments, PAYMENTS).unwrap();
    kubectl(&admin, &["apply", "-f", payments.to_str().unwrap()]);
    let admin_yaml = std::fs::read_to_string(&admin).unwrap();
    assert!(admin_yaml.contains("sim-admin-token"), "{admin_yaml}");
    let spoke = dir.join("spoke-sa.yaml");
    std::fs::write(&spoke, admin_yaml.replace("sim-admin-token", SPOKE_TOKEN)).unwrap();
    (sim, admin, spoke)
}

/// The freeze through its ConfigMap, made as `kubectl create --field-manager=alice` would.
async fn freeze_cycle(admin: &Path, spoke: &mut ChildGuard, hub: Option<&Rest>, cluster: &str) {
    let client = fleetgate_tests::kube_client_from_file(admin).await;
    let ks = dynamic_api(&client, KUSTOMIZATION, "flux-system");
    let suspended = |want: bool| {
        let ks = ks.clone();
        async move {
            let o = ks.get("payments").await.ok()?;
            (o.data["spec"]["suspend"].as_bool().unwrap_or(false) == want).then_some(())
        }
    };
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let cm: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "fleetgate-freeze", "namespace": NS},
        "data": {"reason": "INC-53 rbac"}
    }))
    .unwrap();
    let manager = PostParams {
        field_manager: Some("alice".into()),
        ..Default::default()
    };
    cms.create(&manager, &cm).await.unwrap();
    poll("the spoke sees the freeze: payments suspended", || {
        let exited = spoke.0.try_wait().ok().flatten();
        assert!(exited.is_none(), "spoke exited: {exited:?}");
        suspended(true)
    })
    .await;
    if let Some(hub) = hub {
        let recorded = poll("the hub records the cluster's freeze", || async {
            let v = hub.get("/freezes").await?;
            v.as_array()?
                .iter()
                .find(|x| x["requestedIn"] == cluster)
                .cloned()
        })
        .await;
        assert_eq!(recorded["reason"], "INC-53 rbac");
    }
    cms.delete("fleetgate-freeze", &DeleteParams::default())
        .await
        .unwrap();
    poll("the freeze ends: payments resumed", || suspended(false)).await;
}

/// The spoke's log: no request of the spoke was forbidden.
fn assert_nothing_forbidden(log: &Path) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let forbidden: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("forbidden") || l.contains("403"))
        .collect();
    assert!(
        forbidden.is_empty(),
        "the spoke was refused under the shipped RBAC:\n{}",
        forbidden.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_spoke_sees_an_in_cluster_freeze_under_the_shipped_rbac() {
    let dir = tempfile::tempdir().unwrap();
    let (_sim, admin, spoke_kubeconfig) = cluster(dir.path(), "standalone").await;
    let log = dir.path().join("spoke.log");
    let mut spoke = ChildGuard(
        std::process::Command::new(bin_path("fleetgate-spoke"))
            .args([
                "--standalone",
                "--cluster",
                "this-cluster",
                "--namespace",
                NS,
            ])
            .arg("--kubeconfig")
            .arg(&spoke_kubeconfig)
            .args(["--http-addr", &format!("127.0.0.1:{}", free_port())])
            .env("FLEETGATE_LOG_FORMAT", "text")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("starting fleetgate-spoke"),
    );
    freeze_cycle(&admin, &mut spoke, None, "this-cluster").await;
    assert_nothing_forbidden(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_connected_spoke_sees_an_in_cluster_freeze_under_the_shipped_rbac() {
    let dir = tempfile::tempdir().unwrap();
    let (_sim, admin, spoke_kubeconfig) = cluster(dir.path(), "spoke").await;
    let db = test_db().await;
    let (http, grpc) = (free_port(), free_port());
    let _hub = ChildGuard(
        hub_serve(&db.url, http, grpc, ADMIN)
            .env("FLEETGATE_REPORT_FLUSH_MS", "50")
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting fleetgate-hub"),
    );
    let hub = Rest::new(format!("http://127.0.0.1:{http}"), ADMIN);
    hub.wait_ready().await;
    let token = hub.register("cluster-000", json!({})).await;
    let log = dir.path().join("spoke.log");
    let mut spoke = ChildGuard(
        spoke_connect("cluster-000", grpc, &spoke_kubeconfig, &token, free_port())
            .args(["--report-debounce", "100ms"])
            .env("FLEETGATE_LOG_FORMAT", "text")
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("starting fleetgate-spoke"),
    );
    poll("the spoke connects", || async {
        let c = hub.get("/clusters/cluster-000").await?;
        (c["connected"] == true).then_some(())
    })
    .await;
    freeze_cycle(&admin, &mut spoke, Some(&hub), "cluster-000").await;
    assert_nothing_forbidden(&log);
}
