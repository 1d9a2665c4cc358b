//! The spoke under the RBAC that `deploy/spoke` renders: the simulated API
//! server enforces the rendered ClusterRole/Role for the spoke's
//! ServiceAccount. A full cycle against a real hub (close → suspend + event +
//! snapshot ConfigMap; open → resume + ConfigMap update) runs without a single
//! error, and verbs outside the role are refused (sufficient and no wider).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::start_hub;
use fleetgate_sim::{RbacConfig, RbacUser, Sim, SimConfig};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::wait::await_condition;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const SPOKE_TOKEN: &str = "spoke-sa-token";
const NS: &str = "fleetgate-system";

fn rendered_spoke() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/spoke");
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("running kubectl kustomize");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn kustomizations(c: kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kustomize.toolkit.fluxcd.io", "v1", "Kustomization"),
        "kustomizations",
    );
    Api::namespaced_with(c, "flux-system", &ar)
}

fn suspended(o: Option<&DynamicObject>) -> Option<bool> {
    o.and_then(|o| o.data.pointer("/spec/suspend"))
        .and_then(|v| v.as_bool())
}

/// Waits for `cond` on one object, failing after a minute.
async fn wait_for<K, F>(api: Api<K>, name: &str, what: &str, cond: F)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
    F: Fn(Option<&K>) -> bool,
{
    tokio::time::timeout(Duration::from_secs(60), await_condition(api, name, cond))
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
        .unwrap();
}

/// Like [`wait_for`] for dynamic objects (whose type info is not `Default`):
/// watches the one object until `cond` holds, failing after a minute.
async fn wait_dyn<F>(api: Api<DynamicObject>, name: &str, what: &str, cond: F)
where
    F: Fn(Option<&DynamicObject>) -> bool,
{
    use futures::TryStreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut stream = std::pin::pin!(watcher(api, cfg).default_backoff().applied_objects());
    let done = async {
        while let Some(obj) = stream.try_next().await.unwrap() {
            if cond(Some(&obj)) {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), done)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

fn status_code<T: std::fmt::Debug>(r: kube::Result<T>) -> u16 {
    match r {
        Err(kube::Error::Api(s)) => s.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spoke_works_under_the_rendered_rbac_and_nothing_more() {
    let hub = tokio::task::spawn_blocking(start_hub).await.unwrap();
    let sim = Sim::start(SimConfig {
        clusters: vec!["c1".into()],
        rbac: Some(RbacConfig {
            tokens: BTreeMap::from([(
                SPOKE_TOKEN.to_string(),
                RbacUser::service_account(NS, "fleetgate-spoke"),
            )]),
            manifests: vec![rendered_spoke()],
            ..RbacConfig::default()
        }),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    sim.seed_fleet(8).await.unwrap();
    let admin = fleetgate_tests::kube_client(&sim.kubeconfig_yaml("c1").unwrap()).await;
    let as_spoke =
        fleetgate_tests::kube_client(&sim.kubeconfig_yaml_with_token("c1", SPOKE_TOKEN).unwrap())
            .await;

    // Register the cluster and a gate that is closed for its Kustomizations.
    let reg = hub.json(&["cluster", "register", "c1"]);
    let token = reg["token"].as_str().unwrap().to_string();
    let gate = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        gate.path(),
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: rbac-check}\n\
         spec:\n  clusters: {names: [c1]}\n  targets: {kinds: [Kustomization]}\n  default: closed\n",
    )
    .unwrap();
    hub.ok(&["gate", "apply", "-f", gate.path().to_str().unwrap()]);

    // The spoke, in-process, authenticated as the deploy/spoke ServiceAccount.
    let config = <fleetgate_spoke::Config as clap::Parser>::try_parse_from([
        "fleetgate-spoke",
        "--cluster",
        "c1",
        "--hub-url",
        &hub.grpc_url,
        "--token",
        &token,
        "--namespace",
        NS,
        "--http-addr",
        "127.0.0.1:0",
        "--report-debounce",
        "100ms",
    ])
    .unwrap();
    let shutdown = CancellationToken::new();
    let spoke = fleetgate_spoke::Spoke::start(as_spoke.clone(), config, shutdown.clone())
        .await
        .unwrap();

    // Closed: suspended (patch), an event (create), the snapshot persisted
    // (ConfigMap get → patch 404 → create).
    let ks = kustomizations(admin.clone());
    wait_dyn(ks.clone(), "infra-000", "suspend", |o| {
        suspended(o) == Some(true)
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(admin.clone(), NS);
    wait_for(
        cms.clone(),
        "fleetgate-spoke-snapshot",
        "snapshot ConfigMap",
        |o| o.is_some(),
    )
    .await;
    let first_rev = cms
        .get("fleetgate-spoke-snapshot")
        .await
        .unwrap()
        .data
        .unwrap()["revision"]
        .clone();
    let events: Api<Event> = Api::namespaced(admin.clone(), "flux-system");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let list = events.list(&ListParams::default()).await.unwrap();
        if list
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("GateClosed"))
        {
            break;
        }
        assert!(Instant::now() < deadline, "no GateClosed event within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Open by override: resumed with a reconcile request, snapshot updated
    // (ConfigMap patch by name).
    hub.ok(&[
        "gate",
        "open",
        "rbac-check",
        "--for",
        "1h",
        "--reason",
        "rbac test",
    ]);
    wait_dyn(ks.clone(), "infra-000", "resume", |o| {
        suspended(o) == Some(false)
            && o.is_some_and(|o| {
                o.metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key("reconcile.fluxcd.io/requestedAt"))
            })
    })
    .await;
    wait_for(
        cms.clone(),
        "fleetgate-spoke-snapshot",
        "snapshot update",
        |o| {
            o.and_then(|c| c.data.as_ref())
                .map(|d| d["revision"].clone())
                != Some(first_rev.clone())
        },
    )
    .await;

    // The role was sufficient: the spoke recorded no error (a 409 from a
    // concurrent simulated controller write is optimistic concurrency at
    // work, not a permission problem, and is re-planned).
    let metrics = spoke.ctx.metrics.render();
    let errors: Vec<&str> = metrics
        .lines()
        .filter(|l| {
            l.starts_with("fleetgate_spoke_reconcile_errors_total{")
                && !l.contains("error=\"conflict\"")
                && !l.ends_with(" 0")
        })
        .collect();
    assert!(
        errors.is_empty(),
        "spoke errors under the rendered RBAC: {errors:?}"
    );

    // ...and no wider: everything else is 403 for the spoke's identity.
    let spoke_ks = kustomizations(as_spoke.clone());
    assert!(spoke_ks.get("infra-000").await.is_ok(), "positive control");
    assert_eq!(
        status_code(spoke_ks.delete("infra-000", &Default::default()).await),
        403
    );
    let mut obj = spoke_ks.get("infra-000").await.unwrap();
    obj.data["spec"]["path"] = json!("./elsewhere");
    assert_eq!(
        status_code(
            spoke_ks
                .replace("infra-000", &PostParams::default(), &obj)
                .await
        ),
        403
    );
    assert_eq!(
        status_code(
            spoke_ks
                .patch_status(
                    "infra-000",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {"lastAppliedRevision": "x"}})),
                )
                .await
        ),
        403
    );
    let secrets: Api<Secret> = Api::namespaced(as_spoke.clone(), NS);
    assert_eq!(status_code(secrets.list(&ListParams::default()).await), 403);
    let other_cm: Api<ConfigMap> = Api::namespaced(as_spoke.clone(), "default");
    let cm = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("x".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(
        status_code(other_cm.create(&PostParams::default(), &cm).await),
        403
    );
    let own_ns_cm: Api<ConfigMap> = Api::namespaced(as_spoke.clone(), NS);
    own_ns_cm
        .create(&PostParams::default(), &cm)
        .await
        .unwrap_or_else(|e| {
            panic!("create in its namespace is allowed (the first snapshot save): {e}")
        });
    assert_eq!(
        status_code(
            own_ns_cm
                .patch(
                    "x",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"data": {"a": "b"}}))
                )
                .await
        ),
        403,
        "patch is pinned to the snapshot ConfigMap"
    );
    assert_eq!(
        status_code(
            own_ns_cm
                .delete("fleetgate-spoke-snapshot", &Default::default())
                .await
        ),
        403
    );

    shutdown.cancel();
    spoke.join().await;
    sim.shutdown().await;
}
