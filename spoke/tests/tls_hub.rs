//! The hub connection over TLS: a fake hub with a certificate signed by a
//! throwaway CA (made with the `openssl` CLI), and the spoke trusting that CA
//! through `--hub-ca`.

mod support;

use fleetgate_tests::pki::make_pki;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connects_to_a_tls_hub_trusting_hub_ca() {
    let dir = tempfile::tempdir().unwrap();
    make_pki(dir.path());
    let identity = tonic::transport::Identity::from_pem(
        std::fs::read(dir.path().join("server.crt")).unwrap(),
        std::fs::read(dir.path().join("server.key")).unwrap(),
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
    config.hub_ca = Some(dir.path().join("ca.crt"));
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
