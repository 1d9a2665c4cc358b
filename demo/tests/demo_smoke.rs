//! The demo as a user runs it (the README's first command): it starts (own
//! PostgreSQL, hub, simulated clusters with spokes), the dashboard answers,
//! held changes are visible through the API and the CLI, a rollout is in progress
//! (canary released, the rest waiting for wave 2), and SIGTERM stops
//! everything and removes its temporary files.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use support::Demo;

#[test]
fn demo_starts_shows_held_changes_and_cleans_up() {
    let mut demo = Demo::start(&["--clusters", "4", "--objects-per-cluster", "8"]);
    // The temp dirs its lines name.
    let temp_dirs: Vec<PathBuf> = demo
        .lines
        .iter()
        .flat_map(|line| {
            ["kubeconfigs in ", "(files in "]
                .into_iter()
                .filter_map(|marker| line.split(marker).nth(1))
                .map(|rest| PathBuf::from(rest.trim().trim_end_matches(')')))
        })
        .collect();
    let rollout_line = demo.line("• rollout:").to_string();
    let ready = demo.ready().to_string();
    let held: i64 = demo.field("held").parse().unwrap();
    let held_objects: i64 = demo.field("held_objects").parse().unwrap();
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
    let status = demo.answers("/").expect("dashboard answers");
    assert!((200..300).contains(&status), "dashboard: {status}");
    let v = demo.fleetgate(&["status"]);
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
    let prod = demo.fleetgate(&["status", "prod-eu-1"]);
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
    let staging = demo.fleetgate(&["status", "staging-eu-1"]);
    let deploy = support::held_nginx(&staging);
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
    let r = demo.fleetgate(&["rollout", "status", "team-a-rollout"]);
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
    demo.stop();
    for d in &temp_dirs {
        assert!(!d.exists(), "{} left behind", d.display());
    }
    // The hub is gone with it.
    assert_eq!(
        demo.answers("/healthz"),
        None,
        "hub still answering after the demo stopped"
    );
}
