//! The hub connection over TLS: a fake hub with a certificate signed by a
//! throwaway CA (made with the `openssl` CLI), and the spoke trusting that CA
//! through `--hub-ca`.

mod support;

use std::{path::Path, process::Command};

use support::*;

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA and a server certificate for 127.0.0.1 signed by it.
fn make_certs(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec![
        "req",
        "-x509",
        "-days",
        "1",
        "-subj",
        "/CN=fleetgate-test-ca",
    ];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.pem"]);
    openssl(dir, &ca);
    let mut csr = vec!["req", "-subj", "/CN=fake-hub"];
    csr.extend(ec);
    csr.extend(["-keyout", "hub.key", "-out", "hub.csr"]);
    openssl(dir, &csr);
    std::fs::write(
        dir.join("san.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "hub.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "san.ext",
            "-out",
            "hub.pem",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connects_to_a_tls_hub_trusting_hub_ca() {
    let dir = tempfile::tempdir().unwrap();
    make_certs(dir.path());
    let identity = tonic::transport::Identity::from_pem(
        std::fs::read(dir.path().join("hub.pem")).unwrap(),
        std::fs::read(dir.path().join("hub.key")).unwrap(),
    );
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    let mut hub = FakeHub::start_tls(identity).await;
    hub.set(snapshot(
        1,
        vec![gate("g", "suspend", &["Kustomization"], "closed")],
        vec![],
    ));

    let mut config = spoke_config(Some(format!("https://{}", hub.addr)));
    config.hub_ca = Some(dir.path().join("ca.pem"));
    let spoke = RunningSpoke::start(&cluster, config).await;
    let hello = hub.wait_hello().await;
    assert_eq!(hello.cluster, CLUSTER);
    hub.report_where("the snapshot enforced over TLS", |r| {
        r.revision == 1 && r.objects.iter().any(|o| o.name == "apps" && o.suspended)
    })
    .await;
    spoke.stop().await;
    hub.stop().await;
    cluster.sim.shutdown().await;
}
