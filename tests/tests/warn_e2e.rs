//! Warn mode end to end with real processes: PostgreSQL, `fleetgate-hub`,
//! `fleetgate-sim` (two simulated clusters with Flux) and two `fleetgate-spoke`s.
//! A closed gate in `enforcement: warn` changes no object's `spec.suspend`, while
//! the hub's REST status reports per object, per gate, per cluster and fleet-wide
//! which objects it would suspend; the mirrored Gate object shows `wouldSuspend`
//! and a `GateWouldClose` Event. Replacing it with `enforcement: enforce` (an
//! ordinary audited replace) then suspends exactly the objects it reported.

use std::{collections::BTreeSet, process::Stdio, time::Duration};

use fleetgate_tests::{
    ChildGuard, KUSTOMIZATION, Rest, SimCluster, bin_path, create_namespaces, dynamic_api,
    free_port, hub_serve, kube_client_from_file, poll, spoke_connect, start_sim_clusters, test_db,
    wait_readyz,
};
use k8s_openapi::api::events::v1::Event;
use kube::{
    Api, Client,
    api::{DynamicObject, ListParams, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::{Value, json};

const ADMIN: &str = "fga_warn-e2e-admin-token-0123456789";
const NS: &str = "flux-system";
const GATE: &str = "try-freeze";
const WAIT: Duration = Duration::from_secs(60);

fn api(client: &Client, group: &str, kind: &str) -> Api<DynamicObject> {
    dynamic_api(client, (group, "v1", kind), NS)
}

fn ks_api(client: &Client) -> Api<DynamicObject> {
    dynamic_api(client, KUSTOMIZATION, NS)
}

/// One cluster's Flux objects: a GitRepository and Kustomizations labelled
/// `tier: prod` or not; `person` is suspended by hand (`flux suspend`).
async fn seed(client: &Client, kustomizations: &[(&str, bool, bool)]) {
    let repo = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "repo", "namespace": NS},
        "spec": {"interval": "1m", "url": "https://example.com/repo.git"}
    }))
    .unwrap();
    api(client, "source.toolkit.fluxcd.io", "GitRepository")
        .create(&PostParams::default(), &repo)
        .await
        .unwrap();
    for (name, prod, suspended) in kustomizations {
        let labels = if *prod {
            json!({"tier": "prod"})
        } else {
            json!({})
        };
        let ks = serde_json::from_value(json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"interval": "1m", "path": "./", "prune": true, "suspend": suspended,
                     "sourceRef": {"kind": "GitRepository", "name": "repo"}}
        }))
        .unwrap();
        ks_api(client)
            .create(&PostParams::default(), &ks)
            .await
            .unwrap();
    }
}

/// Names of the Kustomizations with `spec.suspend: true`.
async fn suspended(client: &Client) -> BTreeSet<String> {
    ks_api(client)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|o| o.data.pointer("/spec/suspend") == Some(&json!(true)))
        .map(|o| o.metadata.name.unwrap_or_default())
        .collect()
}

fn gate(enforcement: &str) -> Value {
    json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": GATE},
        "spec": {"clusters": {"selector": {}}, "enforcement": enforcement, "default": "closed",
                 "targets": {"kinds": ["Kustomization"], "selector": {"matchLabels": {"tier": "prod"}}}}
    })
}

/// The names in a list of objects.
fn names(list: &Value) -> BTreeSet<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|o| o["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The objects the cluster's status names as would-suspended by [`GATE`].
fn would_suspend(status: &Value) -> BTreeSet<String> {
    status["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| {
            o["wouldSuspendBy"]
                .as_array()
                .is_some_and(|g| g.contains(&json!(GATE)))
        })
        .map(|o| o["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn start_spoke(c: &SimCluster, hub_grpc: u16, token: &str) -> ChildGuard {
    ChildGuard(
        spoke_connect(&c.name, hub_grpc, &c.kubeconfig, token, free_port())
            .args(["--report-debounce", "200ms", "--reconnect-max", "1s"])
            .spawn()
            .expect("starting fleetgate-spoke"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warn_gate_holds_nothing_and_would_suspend_what_enforce_then_suspends() {
    let db = test_db().await;
    let dir = tempfile::tempdir().unwrap();
    let (_sim, clusters) = start_sim_clusters(dir.path(), 2).await;
    // cluster-000: two prod Kustomizations, one other, one a person suspended;
    // cluster-001: one prod Kustomization.
    let layouts: [&[(&str, bool, bool)]; 2] = [
        &[
            ("apps", true, false),
            ("web", true, false),
            ("infra", false, false),
            ("person", true, true),
        ],
        &[("apps", true, false), ("infra", false, false)],
    ];
    let mut clients = Vec::new();
    for (c, layout) in clusters.iter().zip(layouts) {
        let client = kube_client_from_file(&c.kubeconfig).await;
        create_namespaces(&client, &[NS, "fleetgate-system"]).await;
        seed(&client, layout).await;
        clients.push(client);
    }

    let (hub_http, hub_grpc) = (free_port(), free_port());
    let mut hub = ChildGuard(
        hub_serve(&db.url, hub_http, hub_grpc, ADMIN)
            .stderr(Stdio::null())
            .spawn()
            .expect("starting fleetgate-hub"),
    );
    let http = reqwest::Client::new();
    let rest = Rest::new(format!("http://127.0.0.1:{hub_http}"), ADMIN);
    wait_readyz(&http, &rest.base, 200, &mut hub).await;

    // A bad enforcement is refused naming the field, and writes nothing.
    let (code, body) = rest
        .send(reqwest::Method::POST, "/gates", Some(gate("audit")))
        .await;
    assert_eq!(code, 422, "{body}");
    assert!(body.to_string().contains("spec.enforcement"), "{body}");

    let mut spokes = Vec::new();
    for c in &clusters {
        let registered = rest
            .ok(
                reqwest::Method::POST,
                "/clusters",
                Some(json!({"name": c.name, "labels": {"env": "e2e"}})),
            )
            .await;
        let token = registered["token"].as_str().expect("spoke token");
        spokes.push(start_spoke(c, hub_grpc, token));
    }

    // Impact preview before any gate exists: the spokes report their Flux
    // inventory (no gate targets anything yet), the dry run reads it.
    let dry = poll("dry run sees both inventories", || async {
        let (code, d) = rest
            .send(
                reqwest::Method::POST,
                "/gates?dryRun=true",
                Some(gate("warn")),
            )
            .await;
        assert_eq!(code, 200, "{d}");
        let complete = d["clusters"].as_array().is_some_and(|cs| {
            cs.len() == 2
                && cs.iter().all(|c| {
                    c["inventoryReported"] == json!(true)
                        && c["governed"].as_array().is_some_and(|g| !g.is_empty())
                })
        });
        complete.then_some(d)
    })
    .await;
    assert_eq!(dry["action"], json!("create"));
    assert_eq!(dry["added"], json!(["cluster-000", "cluster-001"]));
    assert_eq!(dry["counts"]["wouldHold"], json!(3), "{dry}");
    let previewed: Vec<BTreeSet<String>> = dry["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["state"], json!("closed"), "{c}");
            names(&c["wouldHold"])
        })
        .collect();
    // Nothing written, nothing audited.
    let (code, _) = rest
        .send(reqwest::Method::GET, &format!("/gates/{GATE}"), None)
        .await;
    assert_eq!(code, 404);
    let audit = rest
        .ok(reqwest::Method::GET, &format!("/audit?target={GATE}"), None)
        .await;
    assert_eq!(audit["items"], json!([]), "{audit}");
    // The CLI says the same (and writes nothing either).
    let file = dir.path().join("gate.yaml");
    std::fs::write(&file, gate("warn").to_string()).unwrap();
    let cli = std::process::Command::new(bin_path("fleetgate"))
        .args(["gate", "apply", "--dry-run", "-o", "json", "-f"])
        .arg(&file)
        .env("FLEETGATE_HUB", &rest.base)
        .env("FLEETGATE_TOKEN", ADMIN)
        .output()
        .expect("running fleetgate");
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    let printed: Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(
        printed["gates"][0]["counts"]["wouldHold"],
        json!(3),
        "{printed}"
    );

    rest.ok(reqwest::Method::POST, "/gates", Some(gate("warn")))
        .await;

    // The fleet status counts what the warn gate would suspend: apps and web on
    // cluster-000 (not the person's), apps on cluster-001.
    let fleet = poll("would-suspend counts reported", || async {
        let (code, s) = rest
            .send(reqwest::Method::GET, "/status/clusters", None)
            .await;
        (code == 200 && s["summary"]["objects"]["wouldSuspend"] == json!(3)).then_some(s)
    })
    .await;
    let summary = &fleet["summary"];
    assert_eq!(
        summary["objects"]["suspended"],
        json!(1),
        "the person's only"
    );
    assert_eq!(summary["clusters"]["closed"], json!(0), "{summary}");
    let g = summary["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["gate"] == GATE)
        .unwrap();
    assert_eq!(
        (&g["enforcement"], &g["closed"], &g["wouldSuspend"]),
        (&json!("warn"), &json!(2), &json!(3)),
        "{g}"
    );
    for c in fleet["clusters"].as_array().unwrap() {
        assert_eq!(c["open"], json!(true), "a warn gate closes nothing: {c}");
        assert_eq!(c["closedBy"], json!([]), "{c}");
        assert_eq!(c["wouldCloseBy"], json!([GATE]), "{c}");
    }

    let mut expected = Vec::new();
    for (c, client) in clusters.iter().zip(&clients) {
        let status = rest
            .ok(
                reqwest::Method::GET,
                &format!("/clusters/{}/status", c.name),
                None,
            )
            .await;
        let would = would_suspend(&status);
        let gate_status = status["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["gate"] == GATE)
            .unwrap();
        assert_eq!(gate_status["state"], json!("closed"));
        assert_eq!(gate_status["wouldSuspend"], json!(would.len()));
        assert_eq!(gate_status["held"], json!(0));
        assert_eq!(status["counts"]["wouldSuspend"], json!(would.len()));
        // The spoke reported its plan with the warn gate: still nothing suspended
        // but the person's own.
        let now_suspended = suspended(client).await;
        assert!(
            now_suspended.iter().all(|n| n == "person"),
            "{}: a warn gate suspended {now_suspended:?}",
            c.name
        );
        expected.push(would);
    }
    assert_eq!(
        expected,
        vec![
            BTreeSet::from(["apps".to_owned(), "web".to_owned()]),
            BTreeSet::from(["apps".to_owned()]),
        ]
    );
    // The dry run reported exactly what the warn gate now would suspend.
    assert_eq!(previewed, expected);

    // In the cluster: the mirrored Gate's status and a GateWouldClose Event.
    let gates = Api::<DynamicObject>::all_with(
        clients[0].clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("fleetgate.io", "v1", "Gate"),
            "gates",
        ),
    );
    poll("Gate status wouldSuspend", || async {
        let g = gates.get(GATE).await.ok()?;
        (g.data["status"]["wouldSuspend"] == json!(2)).then_some(())
    })
    .await;
    let events: Api<Event> = Api::all(clients[0].clone());
    poll("GateWouldClose event", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("GateWouldClose")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(GATE)
            })
            .then_some(())
    })
    .await;

    // The dry run of warn → enforce: a replace over the same clusters, holding
    // the same objects.
    let dry = rest
        .ok(
            reqwest::Method::PUT,
            &format!("/gates/{GATE}?dryRun=true"),
            Some(gate("enforce")),
        )
        .await;
    assert_eq!(
        (&dry["action"], &dry["added"], &dry["removed"]),
        (&json!("replace"), &json!([]), &json!([])),
        "{dry}"
    );
    let previewed: Vec<BTreeSet<String>> = dry["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| names(&c["wouldHold"]))
        .collect();
    assert_eq!(previewed, expected);

    // warn → enforce: an ordinary, audited replace; exactly the reported objects
    // are suspended.
    rest.ok(
        reqwest::Method::PUT,
        &format!("/gates/{GATE}?reason=enforce%20after%20a%20week%20of%20warn"),
        Some(gate("enforce")),
    )
    .await;
    for ((c, client), would) in clusters.iter().zip(&clients).zip(&expected) {
        let mut want = would.clone();
        want.insert("person".into());
        let want = if c.name.ends_with("000") {
            want
        } else {
            would.clone()
        };
        let got = tokio::time::timeout(WAIT, async {
            loop {
                let s = suspended(client).await;
                if s == want {
                    return s;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{}: enforce did not suspend {want:?}", c.name));
        assert_eq!(got, want);
    }
    let after = poll("enforced counts reported", || async {
        let (_, s) = rest
            .send(reqwest::Method::GET, "/status/clusters", None)
            .await;
        (s["summary"]["objects"]["suspended"] == json!(4)).then_some(s)
    })
    .await;
    assert_eq!(after["summary"]["objects"]["wouldSuspend"], json!(0));
    assert_eq!(after["summary"]["clusters"]["closed"], json!(2));
    let audit = rest
        .ok(
            reqwest::Method::GET,
            &format!("/audit?target={GATE}&action=gate.replace"),
            None,
        )
        .await;
    let entry = &audit["items"][0];
    assert_eq!(
        entry["reason"],
        json!("enforce after a week of warn"),
        "{audit}"
    );
    assert!(entry["before"].to_string().contains("warn"), "{entry}");
    drop(spokes);
}
