//! A fleet for rollout end-to-end tests, all real processes: one `fleetgate-sim` with N
//! clusters (a GitRepository `repo` and a Kustomization `apps` in each), PostgreSQL, one or
//! more `fleetgate-hub` replicas on it with a short rollout tick, and one `fleetgate-spoke`
//! per cluster. A recorder watches every cluster's Kustomization and keeps each change of
//! `lastAppliedRevision` in order, so a test can prove a revision never reached a cluster.

#![allow(dead_code)] // each test binary uses a different part

pub mod recorder;

use std::process::{Command, Stdio};
use std::time::Duration;

use fleetgate_tests::{
    ChildGuard, SimCluster, TestDb, bin_path, free_port, hub_serve, poll, spoke_connect,
    start_sim_clusters, test_db,
};
use kube::{
    Api, Client,
    api::{DynamicObject, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::{Value, json};

pub use recorder::Recorder;

pub const ADMIN: &str = "fga_rollout-e2e-admin-token-0123456789";
pub const NS: &str = "flux-system";
pub const GATE: &str = "waves";

/// A Git revision as the simulator's pushes name it.
pub fn rev(n: u32) -> String {
    format!("main@sha1:{n:040x}")
}

pub fn resource(group: &str, kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(group, "v1", kind))
}

pub fn kustomizations(client: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        NS,
        &resource("kustomize.toolkit.fluxcd.io", "Kustomization"),
    )
}

/// One hub replica process (restartable on the same ports).
pub struct Hub {
    pub child: Option<ChildGuard>,
    pub http: u16,
    pub grpc: u16,
    pub id: String,
}

impl Hub {
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.http)
    }
}

/// The fleet.
pub struct Fleet {
    /// First: its watches stop before the simulator does.
    pub recorder: Recorder,
    tag: String,
    _dir: tempfile::TempDir,
    _sim: ChildGuard,
    pub clusters: Vec<SimCluster>,
    pub db: TestDb,
    pub hubs: Vec<Hub>,
    pub tokens: Vec<String>,
    pub spokes: Vec<Option<ChildGuard>>,
    pub http: reqwest::Client,
    /// The hubs' `--rollout-tick` from their next (re)start (200 ms unless a test slows the
    /// driver down to act between two of its steps).
    pub rollout_tick: &'static str,
}

/// A trivial app: one ConfigMap naming the revision.
fn app(n: u32) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: app, namespace: {NS}}}\ndata: {{revision: \"{n}\"}}\n"
    )
}

impl Fleet {
    /// `n` clusters applying revision 1, `hubs` replicas on one database, each cluster
    /// registered with `env: prod` and `fleetgate.io/rollout-order: i`; no spokes yet.
    /// `tag` names the test's log files (see [`log_file`]).
    pub async fn start(tag: &str, n: usize, hubs: usize) -> Fleet {
        let dir = tempfile::tempdir().unwrap();
        let db = test_db().await;
        let (sim, clusters) = start_sim_clusters(dir.path(), n).await;
        let mut clients = Vec::new();
        for c in &clusters {
            let client = fleetgate_tests::kube_client_from_file(&c.kubeconfig).await;
            create_app(&client).await;
            clients.push(client);
        }
        let recorder = Recorder::start(&clusters, &clients);
        let mut fleet = Fleet {
            tag: tag.to_owned(),
            recorder,
            _dir: dir,
            _sim: sim,
            clusters,
            db,
            hubs: Vec::new(),
            tokens: Vec::new(),
            spokes: (0..n).map(|_| None).collect(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            rollout_tick: "200ms",
        };
        for i in 0..n {
            fleet.push(i, 1, true).await;
        }
        for i in 0..n {
            fleet.recorder.wait_applied(i, &rev(1)).await;
        }
        for h in 0..hubs {
            let hub = Hub {
                child: None,
                http: free_port(),
                grpc: free_port(),
                id: format!("replica-{h}"),
            };
            fleet.hubs.push(hub);
            fleet.start_hub(h).await;
        }
        for i in 0..n {
            let name = fleet.clusters[i].name.clone();
            let r = fleet
                .api(
                    reqwest::Method::POST,
                    "/clusters",
                    json!({"name": name, "labels": {"env": "prod", "fleetgate.io/rollout-order": i.to_string()}}),
                )
                .await;
            fleet
                .tokens
                .push(r["token"].as_str().expect("spoke token").to_owned());
        }
        fleet
    }

    /// Starts (or restarts) hub replica `h` and waits until it is ready.
    pub async fn start_hub(&mut self, h: usize) {
        let logs = self.logs();
        let hub = &mut self.hubs[h];
        let child = ChildGuard(
            hub_serve(&self.db.url, hub.http, hub.grpc, ADMIN)
                .env("FLEETGATE_ROLLOUT_TICK", self.rollout_tick)
                .env("FLEETGATE_REPORT_FLUSH_MS", "50")
                .env("FLEETGATE_REPLICA_ID", &hub.id)
                .env("RUST_LOG", log_level())
                .stdout(log_file(&logs, &format!("{}-hub-{}", self.tag, hub.id)))
                .stderr(log_file(&logs, &format!("{}-hub-{}", self.tag, hub.id)))
                .spawn()
                .expect("starting fleetgate-hub"),
        );
        hub.child = Some(child);
        let base = hub.base();
        let http = self.http.clone();
        poll("hub ready", || async {
            let r = http.get(format!("{base}/readyz")).send().await.ok()?;
            r.status().is_success().then_some(())
        })
        .await;
    }

    /// SIGKILLs hub replica `h`.
    pub fn kill_hub(&mut self, h: usize) {
        drop(self.hubs[h].child.take());
    }

    /// Starts the spoke of cluster `i`, connected to hub replica `h`.
    pub fn start_spoke(&mut self, i: usize, h: usize) {
        let logs = self.logs();
        let c = &self.clusters[i];
        let spoke = spoke_connect(
            &c.name,
            self.hubs[h].grpc,
            &c.kubeconfig,
            &self.tokens[i],
            free_port(),
        )
        .args(["--report-debounce", "100ms", "--reconnect-max", "1s"])
        .args(["--heartbeat-interval", "2s"])
        .env("RUST_LOG", log_level())
        .stdout(log_file(&logs, &format!("{}-spoke-{i}", self.tag)))
        .stderr(log_file(&logs, &format!("{}-spoke-{i}", self.tag)))
        .spawn()
        .expect("starting fleetgate-spoke");
        self.spokes[i] = Some(ChildGuard(spoke));
    }

    /// Stops the spoke of cluster `i` (SIGKILL: its stream just breaks).
    pub fn stop_spoke(&mut self, i: usize) {
        drop(self.spokes[i].take());
    }

    /// Starts every cluster's spoke, cluster `i` on replica `i % replicas`.
    pub fn start_spokes(&mut self) {
        let replicas = self.hubs.len();
        for i in 0..self.clusters.len() {
            self.start_spoke(i, i % replicas);
        }
    }

    /// The first replica that is running.
    fn base(&self) -> String {
        self.hubs
            .iter()
            .find(|h| h.child.is_some())
            .expect("a hub replica is running")
            .base()
    }

    /// A REST call as the admin on a running replica; the JSON answer (panics unless 2xx).
    pub async fn api(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let url = format!("{}/api/v1{path}", self.base());
        let mut req = self.http.request(method.clone(), &url).bearer_auth(ADMIN);
        if !body.is_null() {
            req = req.json(&body);
        }
        let r = req.send().await.expect("hub reachable");
        let status = r.status();
        let text = r.text().await.unwrap_or_default();
        assert!(status.is_success(), "{method} {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// `GET /api/v1{path}`; `None` unless 2xx.
    pub async fn get(&self, path: &str) -> Option<Value> {
        let r = self
            .http
            .get(format!("{}/api/v1{path}", self.base()))
            .bearer_auth(ADMIN)
            .send()
            .await
            .ok()?;
        r.status().is_success().then_some(())?;
        r.json().await.ok()
    }

    /// Pushes revision `n` of the app to cluster `i`'s GitRepository; `good: false` makes
    /// it fail in the Kustomization applying it (Ready=False, ReconciliationFailed).
    pub async fn push(&self, i: usize, n: u32, good: bool) {
        let mut body = json!({
            "kind": "GitRepository", "namespace": NS, "name": "repo", "revision": rev(n),
            "manifests": {"apps": app(n)},
        });
        if !good {
            body["ready"] = json!(false);
            body["message"] = json!(format!("revision {n} breaks the app"));
        }
        let url = format!("{}/sim/v1/push", self.clusters[i].url);
        let r = self.http.post(url).json(&body).send().await.unwrap();
        assert!(r.status().is_success(), "push: {}", r.status());
    }

    /// Pushes revision `n` of the app to cluster `i`: it applies and turns healthy, then fails
    /// (Ready=False, HealthCheckFailed) `after` it was applied — for `lasting`, if given.
    pub async fn push_late(&self, i: usize, n: u32, after: &str, lasting: Option<&str>) {
        let mut body = json!({
            "kind": "GitRepository", "namespace": NS, "name": "repo", "revision": rev(n),
            "manifests": {"apps": app(n)}, "ready": false, "failAfter": after,
            "message": format!("revision {n} degrades after {after}"),
        });
        if let Some(l) = lasting {
            body["failFor"] = json!(l);
        }
        let url = format!("{}/sim/v1/push", self.clusters[i].url);
        let r = self.http.post(url).json(&body).send().await.unwrap();
        assert!(r.status().is_success(), "push: {}", r.status());
    }

    /// Runs the `fleetgate` CLI against the first hub; its stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new(bin_path("fleetgate"))
            .args(["--hub", &self.base(), "--token", ADMIN])
            .args(args)
            .output()
            .expect("running fleetgate");
        assert!(
            out.status.success(),
            "fleetgate {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Pushes revision `n` to every cluster.
    pub async fn push_all(&self, n: u32, good: bool) {
        for i in 0..self.clusters.len() {
            self.push(i, n, good).await;
        }
    }

    /// The gate's rollout as `GET /gates/waves/rollout` shows it.
    pub async fn rollout(&self) -> Option<Value> {
        self.get(&format!("/gates/{GATE}/rollout")).await
    }

    /// Polls the rollout until `pred` holds; returns it.
    pub async fn wait_rollout(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        poll(what, || async { self.rollout().await.filter(|r| pred(r)) }).await
    }

    /// The rollout steps in the audit log, oldest first.
    pub async fn rollout_audit(&self) -> Vec<Step> {
        let page = self
            .get(&format!("/audit?target={GATE}&limit=1000"))
            .await
            .expect("audit log");
        let mut items: Vec<Value> = page["items"].as_array().cloned().unwrap_or_default();
        items.sort_by_key(|e| e["id"].as_i64());
        items
            .into_iter()
            .filter(|e| {
                e["action"]
                    .as_str()
                    .is_some_and(|a| a.starts_with("rollout."))
            })
            .map(|e| Step {
                action: e["action"].as_str().unwrap_or_default().to_owned(),
                wave: e["after"]["wave"].as_i64().unwrap_or(0),
                clusters: e["after"]["clusters"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|c| c.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
                rollout: e["after"]["rolloutId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                at: serde_json::from_value(e["at"].clone()).expect("audit time"),
            })
            .collect()
    }

    /// Cluster `i`'s name.
    pub fn name(&self, i: usize) -> String {
        self.clusters[i].name.clone()
    }

    /// Cluster `i`'s Gate object `waves` once its spoke reports the gate waiting for a wave
    /// (bounded wait).
    pub async fn gate_object(&self, i: usize) -> DynamicObject {
        let client = fleetgate_tests::kube_client_from_file(&self.clusters[i].kubeconfig).await;
        let api: Api<DynamicObject> = Api::all_with(client, &resource("fleetgate.io", "Gate"));
        poll("the Gate object waits for its wave", || async {
            let g = api.get_opt(GATE).await.ok()??;
            let waiting = g.data["status"]["conditions"]
                .as_array()?
                .iter()
                .any(|c| c["type"] == "Opened" && c["reason"] == "WaitingForWave");
            waiting.then_some(g)
        })
        .await
    }

    /// Waits until cluster `i`'s Kustomization is suspended (`true`) or not.
    pub async fn wait_suspended(&self, i: usize, suspended: bool) {
        self.recorder.wait_suspended(i, suspended).await;
    }
}

/// A rollout step from the audit log.
#[derive(Debug, Clone)]
pub struct Step {
    /// `rollout.start`, `rollout.release`, …
    pub action: String,
    /// 1-based.
    pub wave: i64,
    pub clusters: Vec<String>,
    pub rollout: String,
    pub at: chrono::DateTime<chrono::Utc>,
}

/// The releases of `steps`: (wave, clusters), in order.
pub fn releases(steps: &[Step]) -> Vec<(i64, Vec<String>)> {
    steps
        .iter()
        .filter(|s| s.action == "rollout.release")
        .map(|s| (s.wave, s.clusters.clone()))
        .collect()
}

/// The gate: `prod` clusters, closed by default, open in `window` (a dated allow window, or
/// none), with three waves (canary cluster-000, two clusters, the rest) and the given
/// rollout settings.
pub fn gate(window: Option<(String, String)>, soak: &str, health_timeout: &str) -> Value {
    let windows = match window {
        Some((start, end)) => json!([{"name": "go", "kind": "allow", "start": start, "end": end}]),
        None => json!([]),
    };
    json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": GATE},
        "spec": {
            "clusters": {"selector": {"matchLabels": {"env": "prod"}}},
            "targets": {"kinds": ["Kustomization"]},
            "default": "closed",
            "windows": windows,
            "rollout": {
                "sortLabel": "fleetgate.io/rollout-order",
                "soak": soak,
                "healthTimeout": health_timeout,
                "waves": [
                    {"name": "canary", "clusters": {"names": ["cluster-000"]}},
                    {"name": "early", "count": 2},
                    {"name": "rest"},
                ],
            },
        },
    })
}

async fn create_app(client: &Client) {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fleetgate-system"}}),
    )
    .unwrap();
    match namespaces.create(&PostParams::default(), &ns).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("namespace: {e}"),
    }
    let create = |group: &'static str, kind: &'static str, obj: Value| {
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), NS, &resource(group, kind));
        async move {
            api.create(
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
        json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": "repo", "namespace": NS},
            "spec": {"interval": "1m", "url": "https://example.com/repo.git"}
        }),
    )
    .await;
    create(
        "kustomize.toolkit.fluxcd.io",
        "Kustomization",
        json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "apps", "namespace": NS},
            "spec": {"interval": "1m", "path": "./apps", "prune": true,
                     "sourceRef": {"kind": "GitRepository", "name": "repo"}}
        }),
    )
    .await;
}

/// Each process logs to a file `name.log` in `dir` (appended across restarts).
fn log_file(dir: &std::path::Path, name: &str) -> Stdio {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("{name}.log")))
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null())
}

impl Fleet {
    /// Where the processes log: `FLEETGATE_E2E_LOG_DIR` (kept, at info), else the fleet's
    /// temporary directory (at warn; its tail is printed when the test fails).
    fn logs(&self) -> std::path::PathBuf {
        let dir = std::env::var_os("FLEETGATE_E2E_LOG_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| self._dir.path().join("logs"));
        let _ = std::fs::create_dir_all(&dir);
        dir
    }
}

impl Drop for Fleet {
    /// A failing test shows what its processes warned about: the last lines of each log.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let Ok(entries) = std::fs::read_dir(self.logs()) else {
            return;
        };
        let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for path in files {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let lines: Vec<&str> = text.lines().collect();
            if lines.is_empty() || !path.to_string_lossy().contains(&self.tag) {
                continue;
            }
            eprintln!("--- last lines of {}:", path.display());
            for line in &lines[lines.len().saturating_sub(20)..] {
                eprintln!("{line}");
            }
        }
    }
}

fn log_level() -> &'static str {
    if std::env::var_os("FLEETGATE_E2E_LOG_DIR").is_some() {
        "info"
    } else {
        "warn"
    }
}

/// RFC 3339 of now + `secs` (seconds precision).
pub fn in_secs(secs: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::seconds(secs))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A bound on how long a whole scenario step may take.
pub const WAIT: Duration = Duration::from_secs(60);
