//! The version-skew policy with real processes of two releases
//! (docs/hub-operations.md, "Upgrades and version skew"): the hub and spoke of
//! the oldest supported release, built from its recorded commit
//! (`fleetgate_tests::release_binaries`), run with today's hub, spoke and
//! database, and the simulator as the cluster:
//! - the old spoke against today's hub, and today's spoke against the old hub:
//!   connect, a report reaching the hub, a gate closing and opening
//!   (`suspend`), an object hold (`holdObjects`) placed and released;
//! - a rolling update: the previous release's hub and today's on one
//!   PostgreSQL after today's migrations, a spoke on each, writes through
//!   each reaching both spokes.
//!
//! The first run builds the old release (minutes); later runs find it built.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use fleetgate_api_types::version::{self, Release};
use fleetgate_tests::objects::Gvk;
use fleetgate_tests::{
    ChildGuard, KUSTOMIZATION, Rest, SimCluster, binaries, dynamic_api, free_port, hub_serve_with,
    nginx_app, poll, release_binaries, spoke_connect_with, start_sim_clusters, test_db,
    watch_until,
};
use kube::Client;
use kube::api::{DynamicObject, PostParams};
use reqwest::Method;
use serde_json::{Value, json};

const ADMIN: &str = "fga_skew-e2e-admin-token-0123456789";
const NS: &str = "flux-system";
const SUSPEND_GATE: &str = "infra-window";
const HOLD_GATE: &str = "nginx-window";
const DEPLOYMENT: Gvk = ("apps", "v1", "Deployment");
const SERVICE: Gvk = ("", "v1", "Service");
const WAIT: Duration = Duration::from_secs(60);

/// A hub or spoke binary and the version it reports.
#[derive(Clone)]
struct Bin {
    path: PathBuf,
    version: &'static str,
}

/// Today's and the old release's binaries (built before any time bound).
struct Bins {
    hub: Bin,
    spoke: Bin,
    old_hub: Bin,
    old_spoke: Bin,
}

fn bins(release: &Release) -> Bins {
    binaries(&["fleetgate-hub", "fleetgate-spoke", "fleetgate-sim"]);
    let old = release_binaries(release);
    let today = |name| Bin {
        path: fleetgate_tests::bin_path(name),
        version: version::VERSION,
    };
    Bins {
        hub: today("fleetgate-hub"),
        spoke: today("fleetgate-spoke"),
        old_hub: Bin {
            path: old.hub,
            version: old.version,
        },
        old_spoke: Bin {
            path: old.spoke,
            version: old.version,
        },
    }
}

fn oldest_supported() -> &'static Release {
    version::oldest_supported_spoke().expect("a supported earlier release is recorded")
}

fn rev(n: u32) -> String {
    format!("main@sha1:{n:040x}")
}

/// A simulated cluster with Flux objects: GitRepository `repo`, Kustomization
/// `apps` (the nginx app) and Kustomization `infra` (no manifests), revision 1
/// applied.
async fn cluster_with_flux(c: &SimCluster) -> Client {
    let client = fleetgate_tests::kube_client_from_file(&c.kubeconfig).await;
    fleetgate_tests::create_namespaces(&client, &[NS, "fleetgate-system"]).await;
    let create = |group: &'static str, kind: &'static str, obj: Value| {
        let client = client.clone();
        async move {
            dynamic_api(&client, (group, "v1", kind), NS)
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(obj).unwrap(),
                )
                .await
                .unwrap_or_else(|e| panic!("creating {kind}: {e}"));
        }
    };
    create(
        "source.toolkit.fluxcd.io",
        "GitRepository",
        json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
               "metadata": {"name": "repo", "namespace": NS},
               "spec": {"interval": "1m", "url": "https://example.com/repo.git"}}),
    )
    .await;
    for (name, path) in [("apps", "./apps"), ("infra", "./infra")] {
        create(
            "kustomize.toolkit.fluxcd.io",
            "Kustomization",
            json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                   "metadata": {"name": name, "namespace": NS},
                   "spec": {"interval": "1m", "path": path, "prune": true,
                            "sourceRef": {"kind": "GitRepository", "name": "repo"}}}),
        )
        .await;
    }
    let body = json!({
        "kind": "GitRepository", "namespace": NS, "name": "repo", "revision": rev(1),
        "manifests": {"apps": nginx_app("nginx:1.25", "blue")},
    });
    let r = reqwest::Client::new()
        .post(format!("{}/sim/v1/push", c.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "push: {}", r.status());
    watch_until(
        dynamic_api(&client, KUSTOMIZATION, NS),
        "apps",
        "revision 1 applied",
        WAIT,
        |o| {
            o.data
                .pointer("/status/lastAppliedRevision")
                .and_then(Value::as_str)
                == Some(rev(1).as_str())
        },
    )
    .await;
    client
}

/// The two gates every scenario uses, for clusters labelled `skew=e2e`.
async fn create_gates(rest: &Rest) {
    let clusters = json!({"selector": {"matchLabels": {"skew": "e2e"}}});
    rest.ok(
        Method::POST,
        "/gates",
        Some(json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": SUSPEND_GATE},
            "spec": {"clusters": clusters, "default": "open",
                     "targets": {"kinds": ["Kustomization"], "namespaces": [NS], "names": ["infra"]}}
        })),
    )
    .await;
    rest.ok(
        Method::POST,
        "/gates",
        Some(json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": HOLD_GATE},
            "spec": {"clusters": clusters, "default": "open", "mode": "holdObjects",
                     "targets": {"kinds": ["Kustomization"], "namespaces": [NS], "names": ["apps"]},
                     "objects": {"kinds": [{"group": "apps", "kind": "Deployment"}, {"group": "", "kind": "Service"}],
                                 "namespaces": ["nginx"]}}
        })),
    )
    .await;
}

/// A hub process; `replica` is its replica id (replicas on one database need
/// their own, as pods have: the default is the host's name).
fn start_hub(bin: &Bin, db_url: &str, replica: &str) -> (ChildGuard, Rest, u16) {
    let (http, grpc) = (free_port(), free_port());
    let hub = ChildGuard(
        hub_serve_with(&bin.path, db_url, http, grpc, ADMIN)
            .env("FLEETGATE_REPLICA_ID", replica)
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.path.display())),
    );
    (
        hub,
        Rest::new(format!("http://127.0.0.1:{http}"), ADMIN),
        grpc,
    )
}

fn start_spoke(bin: &Bin, cluster: &SimCluster, hub_grpc: u16, token: &str) -> ChildGuard {
    let mut cmd: Command = spoke_connect_with(
        &bin.path,
        &cluster.name,
        hub_grpc,
        &cluster.kubeconfig,
        token,
        free_port(),
    );
    cmd.args(["--report-debounce", "200ms", "--reconnect-max", "1s"])
        .args(["--held-kinds", "apps/v1/Deployment,v1/Service"])
        .stderr(Stdio::inherit());
    ChildGuard(
        cmd.spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.path.display())),
    )
}

fn held<'a>(status: &'a Value, kind: &str) -> Option<&'a Value> {
    status["heldObjects"]
        .as_array()?
        .iter()
        .find(|o| o["kind"] == kind && o["name"] == "nginx")
}

/// The spoke's report reached the hub: its version, and the held objects it
/// watches (nothing held, the gates being open). On a timeout the message
/// shows the last status the hub answered.
async fn wait_reported(rest: &Rest, cluster: &str, spoke_version: &str) -> Value {
    let path = format!("/clusters/{cluster}/status");
    let last = std::sync::Mutex::new(Value::Null);
    let found = tokio::time::timeout(WAIT, async {
        loop {
            if let Some(s) = rest.get(&path).await {
                let ok = s["cluster"]["connected"] == true
                    && s["cluster"]["spokeVersion"] == spoke_version
                    && held(&s, "Deployment").is_some_and(|d| d["held"] == false);
                if ok {
                    return s;
                }
                *last.lock().unwrap() = s;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    found.unwrap_or_else(|_| {
        panic!(
            "{} never showed {cluster} reported by a {spoke_version} spoke; last: {}",
            rest.base,
            last.lock().unwrap()
        )
    })
}

fn suspended(o: &DynamicObject) -> bool {
    o.data.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true)
}

fn marked(o: &DynamicObject) -> bool {
    let a = o.metadata.annotations.clone().unwrap_or_default();
    a.get("kustomize.toolkit.fluxcd.io/reconcile")
        .map(String::as_str)
        == Some("disabled")
        && a.get("fleetgate.io/held-by").map(String::as_str) == Some(HOLD_GATE)
}

/// `POST /gates/{gate}/close` through `rest`; the override's id.
async fn close(rest: &Rest, gate: &str) -> String {
    let o = rest
        .ok(
            Method::POST,
            &format!("/gates/{gate}/close"),
            Some(json!({"reason": "skew e2e"})),
        )
        .await;
    o["id"].as_str().expect("override id").to_owned()
}

async fn cancel(rest: &Rest, id: &str) {
    rest.ok(
        Method::DELETE,
        &format!("/overrides/{id}?reason=skew"),
        None,
    )
    .await;
}

/// A gate closing and opening (the `infra` Kustomization suspended and
/// resumed) and an object hold placed and released, through `rest`, on the
/// clusters behind `clients`; the hold shown by the hub `reporting`.
async fn close_and_open(rest: &Rest, clients: &[(&str, &Client)], reporting: &Rest) {
    let id = close(rest, SUSPEND_GATE).await;
    for (name, client) in clients {
        let ks = dynamic_api(client, KUSTOMIZATION, NS);
        watch_until(
            ks,
            "infra",
            &format!("{name}: infra suspended"),
            WAIT,
            suspended,
        )
        .await;
    }
    cancel(rest, &id).await;
    for (name, client) in clients {
        let ks = dynamic_api(client, KUSTOMIZATION, NS);
        watch_until(ks, "infra", &format!("{name}: infra resumed"), WAIT, |o| {
            !suspended(o)
        })
        .await;
    }

    let id = close(rest, HOLD_GATE).await;
    for (name, client) in clients {
        for gvk in [DEPLOYMENT, SERVICE] {
            let api = dynamic_api(client, gvk, "nginx");
            watch_until(
                api,
                "nginx",
                &format!("{name}: {} held", gvk.2),
                WAIT,
                marked,
            )
            .await;
        }
        let path = format!("/clusters/{name}/status");
        poll(
            &format!("{name}: the hub shows the Deployment held"),
            || async {
                let s = reporting.get(&path).await?;
                (held(&s, "Deployment")?["held"] == true).then_some(())
            },
        )
        .await;
    }
    cancel(rest, &id).await;
    for (name, client) in clients {
        for gvk in [DEPLOYMENT, SERVICE] {
            let api = dynamic_api(client, gvk, "nginx");
            watch_until(
                api,
                "nginx",
                &format!("{name}: {} released", gvk.2),
                WAIT,
                |o| !marked(o),
            )
            .await;
        }
    }
}

/// One spoke of `spoke` against one hub of `hub`, on a fresh database.
async fn spoke_against_hub(hub: &Bin, spoke: &Bin) -> Value {
    let db = test_db().await;
    let dir = tempfile::tempdir().unwrap();
    let (sim, clusters) = start_sim_clusters(dir.path(), 1).await;
    let cluster = &clusters[0];
    let client = cluster_with_flux(cluster).await;
    let (_hub, rest, grpc) = start_hub(hub, &db.url, "hub");
    rest.wait_ready().await;
    let token = rest.register(&cluster.name, json!({"skew": "e2e"})).await;
    create_gates(&rest).await;
    let _spoke = start_spoke(spoke, cluster, grpc, &token);
    let status = wait_reported(&rest, &cluster.name, spoke.version).await;
    close_and_open(&rest, &[(&cluster.name, &client)], &rest).await;
    sim.terminate();
    status
}

/// Bounds a scenario (the builds happened before).
async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(300), f)
        .await
        .unwrap_or_else(|_| panic!("{what}: still running after 300 s"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_oldest_supported_spoke_works_with_todays_hub() {
    let b = bins(oldest_supported());
    let status = bounded(
        "old spoke, today's hub",
        spoke_against_hub(&b.hub, &b.old_spoke),
    )
    .await;
    // Today's hub names the old spoke's version and finds it within the policy.
    assert_eq!(
        status["cluster"]["spokeVersion"], b.old_spoke.version,
        "{status}"
    );
    assert_eq!(status["cluster"]["spokeSkew"], "supported", "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn todays_spoke_works_with_the_previous_hub() {
    let release = version::previous_release().expect("a previous release is recorded");
    let b = bins(release);
    let status = bounded(
        "today's spoke, old hub",
        spoke_against_hub(&b.old_hub, &b.spoke),
    )
    .await;
    assert_eq!(
        status["cluster"]["spokeVersion"],
        version::VERSION,
        "{status}"
    );
}

/// A rolling update: replicas of the previous release keep serving while a
/// replica of today's release has migrated the database; a spoke on each; a
/// write through either reaches both spokes, and either shows both reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_previous_hub_and_todays_share_one_database() {
    let release = version::previous_release().expect("a previous release is recorded");
    let b = bins(release);
    bounded("rolling update", async {
        let db = test_db().await;
        let dir = tempfile::tempdir().unwrap();
        let (sim, clusters) = start_sim_clusters(dir.path(), 2).await;
        let (c_old, c_new) = (&clusters[0], &clusters[1]);
        let client_old = cluster_with_flux(c_old).await;
        let client_new = cluster_with_flux(c_new).await;

        // The previous release runs (its migrations applied) with its spoke.
        let (_old_hub, old_rest, old_grpc) = start_hub(&b.old_hub, &db.url, "old-release");
        old_rest.wait_ready().await;
        let token_old = old_rest.register(&c_old.name, json!({"skew": "e2e"})).await;
        create_gates(&old_rest).await;
        let _spoke_old = start_spoke(&b.old_spoke, c_old, old_grpc, &token_old);
        wait_reported(&old_rest, &c_old.name, b.old_spoke.version).await;

        // Today's replica starts on the same database: it applies today's
        // migrations while the old replica keeps serving.
        let (_new_hub, new_rest, new_grpc) = start_hub(&b.hub, &db.url, "this-release");
        new_rest.wait_ready().await;
        assert_eq!(
            newest_applied(&db.url).await,
            newest_migration(),
            "today's replica applied today's migrations (the release's last: {})",
            release.last_migration
        );
        let token_new = new_rest.register(&c_new.name, json!({"skew": "e2e"})).await;
        let _spoke_new = start_spoke(&b.spoke, c_new, new_grpc, &token_new);
        wait_reported(&new_rest, &c_new.name, b.spoke.version).await;

        // Each replica sees both clusters' reports.
        for rest in [&old_rest, &new_rest] {
            wait_reported(rest, &c_old.name, b.old_spoke.version).await;
            wait_reported(rest, &c_new.name, b.spoke.version).await;
        }
        let clients = [
            (c_old.name.as_str(), &client_old),
            (c_new.name.as_str(), &client_new),
        ];
        // Writes through today's replica reach the old replica's spoke too, and
        // the other way round.
        close_and_open(&new_rest, &clients, &old_rest).await;
        close_and_open(&old_rest, &clients, &new_rest).await;
        sim.terminate();
    })
    .await;
}

/// The newest migration applied to the database.
async fn newest_applied(url: &str) -> i64 {
    let pool = sqlx::PgPool::connect(url).await.expect("connecting");
    let newest: i64 = sqlx::query_scalar("select max(version) from _sqlx_migrations")
        .fetch_one(&pool)
        .await
        .expect("reading _sqlx_migrations");
    pool.close().await;
    newest
}

/// The number of the newest file in `migrations/`.
fn newest_migration() -> i64 {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations");
    std::fs::read_dir(dir)
        .expect("migrations/")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.split('_').next()?.parse().ok())
        .max()
        .expect("a migration")
}
