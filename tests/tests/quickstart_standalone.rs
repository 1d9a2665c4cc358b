//! The quick start "one cluster, no hub" end to end, as a user runs it: a fresh
//! simulated cluster with RBAC on (`fleetgate-sim --service-account-token`), the
//! quick start's commands run verbatim by `sh` with the real kubectl
//! (`kubectl apply -k deploy/standalone` installs the CRD, RBAC and the spoke's
//! Deployment), then the real `fleetgate-spoke` binary run the way that Deployment
//! runs it (its env, its ServiceAccount's token, so only the RBAC from `deploy/`):
//! the Gate suspends the payments Kustomization, a pushed commit waits (`kubectl get
//! gates` shows it held), and the quick start's open request opens the gate and resumes
//! payments.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use fleetgate_tests::{ChildGuard, bin_path, free_port, poll, start_sim_with};
use serde_json::Value;

const SPOKE_TOKEN: &str = "quickstart-spoke-sa-token";

/// The quick start's commands (README "One cluster without a hub"), verbatim.
const QUICK_START: [&str; 3] = [
    "kubectl apply -k deploy/standalone",
    "kubectl apply -f examples/in-cluster/sre-approval.yaml",
    r#"kubectl annotate --overwrite gate/sre-approval open.gate.fleetgate.io/requestedAt="$(date -u +%FT%TZ)""#,
];

/// What the Gate targets: Flux's Kustomization `payments` and its source.
const PAYMENTS: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: flux-system
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 1m
  url: https://github.com/example/apps
  ref:
    branch: main
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: payments
  namespace: flux-system
spec:
  interval: 10m
  path: ./payments
  prune: true
  sourceRef:
    kind: GitRepository
    name: apps
"#;

/// "Pushes a commit" to payments' GitRepository (the simulator's own API, over the
/// cluster's TLS port, trusting the simulator's test CA).
async fn push(url: &str, revision: &str) {
    let ca = std::fs::read(repo_root().join("sim/tls/ca.crt")).expect("sim CA");
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("CA PEM"))
        .build()
        .expect("http client");
    let r = http
        .post(format!("{url}/sim/v1/push"))
        .json(
            &serde_json::json!({"kind": "GitRepository", "namespace": "flux-system",
            "name": "apps", "revision": revision}),
        )
        .send()
        .await
        .expect("push sent");
    assert!(r.status().is_success(), "push: {}", r.status());
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Runs a shell command line in the repository with the admin kubeconfig.
fn sh(kubeconfig: &Path, line: &str, stdin: Option<&str>) -> String {
    use std::io::Write;
    let mut child = Command::new("sh")
        .args(["-c", line])
        .current_dir(repo_root())
        .env("KUBECONFIG", kubeconfig)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    let mut pipe = child.stdin.take().expect("stdin");
    pipe.write_all(stdin.unwrap_or_default().as_bytes())
        .expect("stdin written");
    drop(pipe);
    let out = child.wait_with_output().expect("sh output");
    assert!(
        out.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn get_json(kubeconfig: &Path, args: &str) -> Value {
    serde_json::from_str(&sh(
        kubeconfig,
        &format!("kubectl get {args} -o json"),
        None,
    ))
    .expect("kubectl prints JSON")
}

fn condition(obj: &Value, type_: &str) -> Option<(String, String)> {
    let c = obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?;
    Some((c["status"].as_str()?.into(), c["reason"].as_str()?.into()))
}

/// The spoke as the rendered Deployment runs it: every `env` value of its container,
/// the downward-API fields filled in as the kubelet would, the pod's ServiceAccount token.
fn spoke_from_deployment(deploy: &Value, kubeconfig: &Path) -> Command {
    let container = &deploy["spec"]["template"]["spec"]["containers"][0];
    let namespace = deploy["metadata"]["namespace"].as_str().unwrap_or_default();
    let mut cmd = Command::new(bin_path("fleetgate-spoke"));
    cmd.arg("--kubeconfig").arg(kubeconfig);
    for e in container["env"].as_array().expect("container env") {
        let name = e["name"].as_str().unwrap_or_default();
        let value = match (
            &e["value"],
            e["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
        ) {
            (Value::String(v), _) => v.clone(),
            (_, Some("metadata.namespace")) => namespace.to_string(),
            (_, Some("metadata.name")) => "fleetgate-spoke-quickstart".to_string(),
            other => panic!("unexpected env {name}: {other:?}"),
        };
        cmd.env(name, value);
    }
    // The pod's port, on loopback here.
    cmd.env(
        "FLEETGATE_SPOKE_HTTP_ADDR",
        format!("127.0.0.1:{}", free_port()),
    );
    cmd.env("FLEETGATE_LOG_FORMAT", "text")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null());
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_quick_start_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let token_arg = format!("{SPOKE_TOKEN}=fleetgate-system/fleetgate-spoke");
    let (_sim, clusters) =
        start_sim_with(dir.path(), 1, &["--service-account-token", &token_arg]).await;
    let admin = clusters[0].kubeconfig.clone();

    // 1. Install: CRD (already served: re-applied, no conflict), RBAC, the Deployment.
    let installed = sh(&admin, QUICK_START[0], None);
    assert!(
        installed.contains("clusterrole.rbac.authorization.k8s.io/fleetgate-spoke created"),
        "{installed}"
    );
    sh(&admin, "kubectl apply -f -", Some(PAYMENTS));
    // payments has applied a first revision before any gate exists.
    push(
        &clusters[0].url,
        "main@sha1:1111111111111111111111111111111111111111",
    )
    .await;
    poll("payments applied the first revision", || {
        let admin = admin.clone();
        async move {
            let ks = get_json(&admin, "kustomization payments -n flux-system");
            (ks["status"]["lastAppliedRevision"]
                == "main@sha1:1111111111111111111111111111111111111111")
                .then_some(())
        }
    })
    .await;
    // 2. A Gate, closed by default.
    sh(&admin, QUICK_START[1], None);

    // The spoke, as deployed, with its ServiceAccount's token instead of the admin's.
    let deploy = get_json(&admin, "deployment fleetgate-spoke -n fleetgate-system");
    assert_eq!(
        deploy["spec"]["template"]["spec"]["serviceAccountName"],
        "fleetgate-spoke"
    );
    let admin_yaml = std::fs::read_to_string(&admin).unwrap();
    assert!(admin_yaml.contains("sim-admin-token"), "{admin_yaml}");
    let spoke_kubeconfig = dir.path().join("spoke-sa.yaml");
    std::fs::write(
        &spoke_kubeconfig,
        admin_yaml.replace("sim-admin-token", SPOKE_TOKEN),
    )
    .unwrap();
    let mut spoke = ChildGuard(
        spoke_from_deployment(&deploy, &spoke_kubeconfig)
            .spawn()
            .expect("starting fleetgate-spoke"),
    );

    // A commit pushed while the gate is closed waits: the Gate counts it held.
    poll("payments suspended", || {
        let exited = spoke.0.try_wait().ok().flatten();
        let admin = admin.clone();
        async move {
            assert!(exited.is_none(), "spoke exited: {exited:?}");
            let ks = get_json(&admin, "kustomization payments -n flux-system");
            (ks["spec"]["suspend"] == true).then_some(())
        }
    })
    .await;
    push(
        &clusters[0].url,
        "main@sha1:2222222222222222222222222222222222222222",
    )
    .await;

    // The Gate holds payments: suspended by the spoke, counted, shown by kubectl.
    poll("the gate holds payments", || {
        let exited = spoke.0.try_wait().ok().flatten();
        let admin = admin.clone();
        async move {
            if let Some(st) = exited {
                panic!("spoke exited: {st}");
            }
            let gate = get_json(&admin, "gate sre-approval");
            let ks = get_json(&admin, "kustomization payments -n flux-system");
            (condition(&gate, "Opened") == Some(("False".into(), "Default".into()))
                && gate["status"]["held"] == 1
                && ks["spec"]["suspend"] == true)
                .then_some(())
        }
    })
    .await;
    let table = sh(&admin, "kubectl get gates", None);
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(&row[..3], ["sre-approval", "False", "Default"], "{table}");
    assert_eq!(
        row[3], "1",
        "HELD (no next transition while closed by default): {table}"
    );

    // 3. The open request: the gate opens for its window and payments resumes.
    sh(&admin, QUICK_START[2], None);
    poll("the open request opens the gate", || async {
        let gate = get_json(&admin, "gate sre-approval");
        let ks = get_json(&admin, "kustomization payments -n flux-system");
        (condition(&gate, "Opened").is_some_and(|(s, r)| s == "True" && r == "OpenRequested")
            && ks["spec"]["suspend"] != true)
            .then_some(())
    })
    .await;
}
