//! The demo as a user runs it (the README's first command): it starts (own
//! PostgreSQL, hub, simulated clusters with spokes), the dashboard answers,
//! held changes are visible through the API and the CLI, a rollout is in progress
//! (canary released, the rest waiting for wave 2), and SIGTERM stops
//! everything and removes its temporary files.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fleetgate_tests::{ChildGuard, bin_path, free_port};

#[test]
fn demo_starts_shows_held_changes_and_cleans_up() {
    let http = free_port();
    let grpc = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fleetgate-demo"))
        .args(["--clusters", "4", "--objects-per-cluster", "8"])
        .args(["--http-addr", &format!("127.0.0.1:{http}")])
        .args(["--grpc-addr", &format!("127.0.0.1:{grpc}")])
        .env_remove("DATABASE_URL")
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting fleetgate-demo");
    let stdout = child.stdout.take().unwrap();
    let guard = ChildGuard(child);
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next_line = |deadline: Instant| -> String {
        let left = deadline.saturating_duration_since(Instant::now());
        rx.recv_timeout(left)
            .unwrap_or_else(|e| panic!("demo output ended or timed out: {e}"))
    };

    // Wait (bounded) for the ready line; remember the temp dirs it names.
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut temp_dirs: Vec<PathBuf> = Vec::new();
    let mut rollout_line = String::new();
    let ready = loop {
        let line = next_line(deadline);
        if line.starts_with("• rollout:") {
            rollout_line = line.clone();
        }
        for marker in ["kubeconfigs in ", "(files in "] {
            if let Some(rest) = line.split(marker).nth(1) {
                temp_dirs.push(PathBuf::from(rest.trim().trim_end_matches(')')));
            }
        }
        if line.starts_with("demo ready:") {
            break line;
        }
    };
    let field = |k: &str| {
        ready
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {k} in {ready}"))
            .to_string()
    };
    let hub = field("hub");
    let token = field("token");
    let held: i64 = field("held").parse().unwrap();
    let held_objects: i64 = field("held_objects").parse().unwrap();
    assert!(
        held_objects >= 1,
        "nginx-window holds the nginx Deployment on staging-eu-1: {ready}"
    );
    assert!(
        held > 0,
        "the SRE approval gate holds the pushed payments revision: {ready}"
    );
    assert_eq!(
        temp_dirs.len(),
        2,
        "PostgreSQL and kubeconfig dirs: {temp_dirs:?}"
    );
    for d in &temp_dirs {
        assert!(d.is_dir(), "{}", d.display());
    }

    // The dashboard answers; the CLI sees the held changes and the spokes.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let status = rt.block_on(async {
        reqwest::Client::new()
            .get(format!("{hub}/"))
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .expect("dashboard answers")
            .status()
    });
    assert!(status.is_success(), "dashboard: {status}");
    let out = Command::new(bin_path("fleetgate"))
        .args(["status", "-o", "json", "--hub", &hub, "--token", &token])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["clusters"]["total"], 4);
    assert_eq!(v["summary"]["clusters"]["connected"], 4);
    assert!(v["summary"]["objects"]["held"].as_i64().unwrap() > 0);
    let prod = v["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cluster"]["name"] == "prod-eu-1")
        .expect("prod-eu-1 in the demo fleet");
    assert!(
        prod["closedBy"]
            .as_array()
            .unwrap()
            .contains(&"sre-approval".into()),
        "prod-eu-1 closed by sre-approval: {prod}"
    );
    // The fleet view carries no objects; one cluster's detail does.
    let out = Command::new(bin_path("fleetgate"))
        .args([
            "status",
            "prod-eu-1",
            "-o",
            "json",
            "--hub",
            &hub,
            "--token",
            &token,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let prod: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let payments = prod["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "payments-api")
        .expect("payments-api reported");
    assert_eq!(payments["suspended"], true);
    assert!(
        payments["suspendedBy"]
            .as_array()
            .unwrap()
            .contains(&"sre-approval".into())
    );
    assert_eq!(payments["held"], true);

    // The nginx app on staging-eu-1: the Deployment is held by nginx-window
    // (object-level hold), with kubectl showing fleetgate's mark on it.
    let out = Command::new(bin_path("fleetgate"))
        .args([
            "status",
            "staging-eu-1",
            "-o",
            "json",
            "--hub",
            &hub,
            "--token",
            &token,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let staging: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let deploy = staging["heldObjects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Deployment" && o["name"] == "nginx")
        .unwrap_or_else(|| panic!("nginx Deployment reported: {staging}"));
    assert_eq!(
        deploy["heldBy"],
        serde_json::json!(["nginx-window"]),
        "{deploy}"
    );
    assert_eq!(deploy["kustomizationName"], "apps", "{deploy}");

    // A rollout in progress: team-a-rollout released its canary (dev-eu-1); staging-eu-1
    // waits for wave 2 — in the demo's output, `fleetgate rollout status` and `status`.
    assert!(
        rollout_line.contains("team-a-rollout") && rollout_line.contains("wait for wave 2"),
        "{rollout_line:?}"
    );
    let out = Command::new(bin_path("fleetgate"))
        .args(["rollout", "status", "team-a-rollout", "-o", "json"])
        .args(["--hub", &hub, "--token", &token])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["state"], "running", "{r}");
    let canary = &r["waves"][0]["clusters"][0];
    assert_eq!(canary["name"], "dev-eu-1", "{r}");
    assert!(canary["releasedAt"].is_string(), "{r}");
    assert_eq!(r["waves"][1]["clusters"][0]["name"], "staging-eu-1", "{r}");
    assert_eq!(r["waves"][1]["clusters"][0]["health"], "closed", "{r}");
    let gate = staging["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["gate"] == "team-a-rollout")
        .unwrap_or_else(|| panic!("team-a-rollout on staging-eu-1: {staging}"));
    assert_eq!(gate["state"], "closed", "{gate}");
    assert_eq!(gate["reason"], "waiting for rollout wave 2", "{gate}");

    // The clusters expose the hub's gates as Gate objects (the spoke mirrors
    // them); prod-eu-1 shows sre-approval closed. Bounded: the mirror follows
    // the snapshot asynchronously.
    let kubeconfigs = temp_dirs
        .iter()
        .find(|d| d.join("prod-eu-1.yaml").exists())
        .expect("kubeconfig dir");
    let held_by = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfigs.join("staging-eu-1.yaml"))
        .args(["-n", "nginx", "get", "deployment", "nginx", "-o"])
        .arg("jsonpath={.metadata.annotations.fleetgate\\.io/held-by}")
        .output()
        .expect("kubectl runs");
    assert_eq!(String::from_utf8_lossy(&held_by.stdout), "nginx-window");
    let kubeconfig = kubeconfigs.join("prod-eu-1.yaml");
    let deadline = Instant::now() + Duration::from_secs(30);
    let table = loop {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["get", "gates"])
            .output()
            .expect("kubectl runs");
        let table = String::from_utf8_lossy(&out.stdout).into_owned();
        if table
            .lines()
            .any(|l| l.starts_with("sre-approval") && l.contains("False"))
        {
            break table;
        }
        assert!(
            Instant::now() < deadline,
            "no closed sre-approval Gate: {table}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        table.starts_with("NAME") && table.contains("REASON"),
        "{table}"
    );

    // SIGTERM: everything stops, exit 0, temp files gone.
    guard.terminate();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut guard = guard;
    let code = loop {
        if let Some(st) = guard.0.try_wait().unwrap() {
            break st.code();
        }
        assert!(
            Instant::now() < deadline,
            "demo did not stop within 60 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(code, Some(0));
    for d in &temp_dirs {
        assert!(!d.exists(), "{} left behind", d.display());
    }
    // The hub is gone with it.
    let gone = rt.block_on(async {
        reqwest::Client::new()
            .get(format!("{hub}/healthz"))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .is_err()
    });
    assert!(gone, "hub still answering after the demo stopped");
}
