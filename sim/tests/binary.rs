//! The `fleetgate-sim` binary: clusters and kubeconfigs for kubectl, SIGTERM shutdown,
//! and RBAC from rendered manifests plus ServiceAccount tokens given on the command line.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

/// Starts the binary and reads its first `n` "cluster URL kubeconfig" lines.
async fn spawn(args: &[&str], n: usize) -> (Child, Lines<BufReader<ChildStdout>>, Vec<String>) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_fleetgate-sim"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for _ in 0..n {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("cluster line")
            .unwrap()
            .unwrap();
        seen.push(line);
    }
    (child, lines, seen)
}

async fn kubectl(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    tokio::process::Command::new("kubectl")
        .env("HOME", dir)
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .args(args)
        .output()
        .await
        .unwrap()
}

async fn terminate(mut child: Child) {
    let pid = child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait())
        .await
        .expect("exits on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn binary_serves_clusters_and_writes_kubeconfigs() {
    let dir = tempfile::tempdir().unwrap();
    let kc_dir = dir.path().to_str().unwrap().to_string();
    let (child, _lines, seen) = spawn(
        &[
            "--clusters",
            "2",
            "--objects-per-cluster",
            "5",
            "--kubeconfig-dir",
            &kc_dir,
        ],
        2,
    )
    .await;
    assert!(
        seen[0].starts_with("cluster-000 http://127.0.0.1:"),
        "{seen:?}"
    );
    let kubeconfig = seen[1].split(' ').nth(2).unwrap().to_string();
    assert!(kubeconfig.ends_with("cluster-001.yaml"));
    let out = kubectl(
        dir.path(),
        &[
            "--kubeconfig",
            &kubeconfig,
            "get",
            "gitrepo,helmrepo,ks,hr",
            "-A",
            "-o",
            "name",
        ],
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 5, "{stdout}");
    terminate(child).await;
}

const ROLE: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: fleetgate-system}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: fleetgate-spoke, namespace: fleetgate-system}
spec: {}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: fleetgate-spoke}
rules:
- apiGroups: ["kustomize.toolkit.fluxcd.io"]
  resources: ["kustomizations"]
  verbs: ["get", "list", "watch", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: fleetgate-spoke}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: fleetgate-spoke}
subjects:
- {kind: ServiceAccount, name: fleetgate-spoke, namespace: fleetgate-system}
"#;

#[tokio::test]
async fn binary_enforces_rbac_from_manifests_and_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("rbac.yaml");
    std::fs::write(&manifest, ROLE).unwrap();
    let kc_dir = dir.path().to_str().unwrap().to_string();
    let (child, _lines, seen) = spawn(
        &[
            "--objects-per-cluster",
            "3",
            "--kubeconfig-dir",
            &kc_dir,
            "--rbac-manifest",
            manifest.to_str().unwrap(),
            "--service-account-token",
            "spoke-token=fleetgate-system/fleetgate-spoke",
        ],
        1,
    )
    .await;
    assert!(
        seen[0].starts_with("cluster-000 https://127.0.0.1:"),
        "{seen:?}"
    );
    let kubeconfig = seen[0].split(' ').nth(2).unwrap().to_string();
    // The kubeconfig is an admin; the ServiceAccount token gets exactly its ClusterRole
    // (kubectl patch reads the object first, so the denial names `get`).
    let admin = kubectl(
        dir.path(),
        &[
            "--kubeconfig",
            &kubeconfig,
            "get",
            "gitrepo",
            "-A",
            "-o",
            "name",
        ],
    )
    .await;
    assert!(
        admin.status.success(),
        "{}",
        String::from_utf8_lossy(&admin.stderr)
    );
    let as_spoke = |args: &[&str]| {
        let mut all = vec![
            "--kubeconfig",
            kubeconfig.as_str(),
            "--token",
            "spoke-token",
        ];
        all.extend_from_slice(args);
        all.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| {
        let dir = dir.path().to_path_buf();
        async move {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            kubectl(&dir, &refs).await
        }
    };
    let ok = run(as_spoke(&[
        "patch",
        "ks",
        "infra-000",
        "-n",
        "flux-system",
        "--type=merge",
        "-p",
        r#"{"spec":{"suspend":true}}"#,
    ]))
    .await;
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let denied = run(as_spoke(&[
        "patch",
        "gitrepo",
        "flux-system",
        "-n",
        "flux-system",
        "--type=merge",
        "-p",
        r#"{"spec":{"suspend":true}}"#,
    ]))
    .await;
    assert!(!denied.status.success());
    let stderr = String::from_utf8_lossy(&denied.stderr);
    assert!(
        stderr.contains(r#"Error from server (Forbidden): gitrepositories.source.toolkit.fluxcd.io "flux-system" is forbidden: User "system:serviceaccount:fleetgate-system:fleetgate-spoke" cannot get resource "gitrepositories" in API group "source.toolkit.fluxcd.io" in the namespace "flux-system""#),
        "{stderr}"
    );
    // `kubectl auth can-i` asks the server (SelfSubjectAccessReview).
    for (resource, want) in [("kustomizations", "yes"), ("gitrepositories", "no")] {
        let out = run(as_spoke(&[
            "auth",
            "can-i",
            "patch",
            resource,
            "-n",
            "flux-system",
        ]))
        .await;
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            want,
            "{resource}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    terminate(child).await;
}
