//! Rollout waves end to end (issue 15) with real processes: PostgreSQL, `fleetgate-hub`
//! (one or two replicas, a 200 ms rollout tick), `fleetgate-sim` with six clusters and a
//! `fleetgate-spoke` per cluster. Six clusters in three waves (canary cluster-000; early
//! cluster-001..002; rest cluster-003..005). The Kustomizations' `lastAppliedRevision` and
//! `lastAttemptedRevision`, watched throughout, prove which revision reached which cluster
//! and in which order; the audit log proves what the hub decided, and when.

mod rollout_support;

use reqwest::Method;
use rollout_support::{Fleet, GATE, Step, gate, in_secs, releases, rev};
use serde_json::{Value, json};

/// Each cluster's wave (1-based), by index.
const WAVE_OF: [i64; 6] = [1, 2, 2, 3, 3, 3];

fn names(of: &[usize]) -> Vec<String> {
    of.iter().map(|i| format!("cluster-{i:03}")).collect()
}

/// The three releases of one rollout, in wave order, each once.
fn three_releases() -> Vec<(i64, Vec<String>)> {
    vec![
        (1, names(&[0])),
        (2, names(&[1, 2])),
        (3, names(&[3, 4, 5])),
    ]
}

/// The steps of rollout `id`.
fn of_rollout(steps: &[Step], id: &str) -> Vec<Step> {
    steps.iter().filter(|s| s.rollout == id).cloned().collect()
}

/// Clusters applied `revision` wave by wave: never one of a later wave before one of an
/// earlier wave.
fn assert_wave_order(f: &Fleet, revision: &str) {
    let order = f.recorder.order_of(revision);
    let waves: Vec<i64> = order.iter().map(|&i| WAVE_OF[i]).collect();
    assert!(
        waves.windows(2).all(|w| w[0] <= w[1]),
        "{revision} applied out of wave order: clusters {order:?} (waves {waves:?})"
    );
}

/// The gate's state on cluster `i` as `GET /clusters/{name}/status` shows it.
async fn gate_state(f: &Fleet, i: usize) -> Option<(String, String)> {
    let s = f.get(&format!("/clusters/{}/status", f.name(i))).await?;
    let g = s["gates"].as_array()?.iter().find(|g| g["gate"] == GATE)?;
    Some((g["state"].as_str()?.into(), g["reason"].as_str()?.into()))
}

fn state_is(r: &Value, state: &str) -> bool {
    r["state"] == state
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waves_release_in_order_at_the_window_edge_and_a_freeze_closes_every_cluster_at_once() {
    let mut f = Fleet::start("window", 6, 1).await;
    // The window starts tomorrow: closed now.
    let gate_json = |start: String, end: String| gate(Some((start, end)), "2s", "30s");
    f.api(
        Method::POST,
        "/gates",
        gate_json(in_secs(86_400), in_secs(90_000)),
    )
    .await;
    f.start_spokes();
    for i in 0..6 {
        f.wait_suspended(i, true).await;
    }

    // A good revision waits behind the closed gate on every cluster.
    f.push_all(2, true).await;
    fleetgate_tests::poll("revision 2 held on all six clusters", || async {
        let s = f.get("/status").await?;
        (s["objects"]["held"] == 6).then_some(())
    })
    .await;
    assert!(f.rollout().await.is_none(), "no rollout before the window");

    // The window's edge a few seconds ahead: the rollout starts there.
    let start = in_secs(3);
    f.api(
        Method::PUT,
        &format!("/gates/{GATE}"),
        gate_json(start.clone(), in_secs(3_600)),
    )
    .await;
    f.recorder.wait_applied(0, &rev(2)).await;
    // The canary has it; wave 3 waits (two waves' health and soak away), visibly.
    let (state, reason) = gate_state(&f, 5).await.expect("cluster-005 gate state");
    assert_eq!(state, "closed");
    assert!(reason.contains("waiting for rollout wave 3"), "{reason}");
    // In the cluster, its Gate object says the same, naming the wave.
    let gate_object = f.gate_object(5).await;
    let opened = gate_object.data["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Opened"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(opened["status"], "False", "{opened}");
    assert_eq!(opened["reason"], "WaitingForWave", "{opened}");
    assert_eq!(
        opened["message"],
        "waiting for rollout wave 3 'rest' (not released on this cluster yet)"
    );
    f.recorder.wait_applied(5, &rev(2)).await;
    let done = f
        .wait_rollout("rollout completed", |r| state_is(r, "completed"))
        .await;
    assert_eq!(
        done["openingAt"].as_str().map(|t| t.replace(".000", "")),
        Some(start.clone()),
        "the rollout is for the window's opening: {done}"
    );
    for i in 0..6 {
        f.recorder.wait_applied(i, &rev(2)).await;
    }
    assert_wave_order(&f, &rev(2));
    let id = done["id"].as_str().unwrap().to_owned();
    let steps = of_rollout(&f.rollout_audit().await, &id);
    assert_eq!(releases(&steps), three_releases(), "{steps:#?}");
    // Each wave soaked 2 s after it was healthy before the next was released.
    let at = |action: &str, wave: i64| {
        steps
            .iter()
            .find(|s| s.action == action && s.wave == wave)
            .unwrap_or_else(|| panic!("{action} of wave {wave}: {steps:#?}"))
            .at
    };
    for w in 1..3 {
        let soaked = at("rollout.release", w + 1) - at("rollout.healthy", w);
        assert!(
            soaked >= chrono::Duration::seconds(2),
            "wave {} released {soaked} after wave {w} was healthy",
            w + 1
        );
    }

    // A freeze the driver never sees: the hub restarts with a driver that steps once at
    // start and then not for an hour, so the freeze is made and cancelled between two
    // steps. Its end still fences the opening: the hub sends no release older than the
    // freeze's end, so every spoke stays closed (its Gate object waits for its wave) and
    // revision 3 reaches no cluster.
    f.kill_hub(0);
    f.rollout_tick = "1h";
    f.start_hub(0).await;
    let freeze = f
        .api(
            Method::POST,
            &format!("/gates/{GATE}/close"),
            json!({"reason": "e2e: freeze"}),
        )
        .await;
    for i in 0..6 {
        f.wait_suspended(i, true).await;
    }
    f.push_all(3, true).await;
    let id3 = freeze["id"].as_str().expect("override id");
    f.api(Method::DELETE, &format!("/overrides/{id3}"), Value::Null)
        .await;
    for i in 0..6 {
        f.gate_object(i).await;
        assert!(f.recorder.latest(i).suspended, "cluster {i} stays closed");
        assert!(!f.recorder.attempted(i).contains(&rev(3)), "cluster {i}");
    }
    assert_eq!(f.rollout().await.expect("the completed rollout")["id"], id);
    // The driver's next step (a restarted replica, back to the 200 ms tick) ends the
    // completed rollout and stages the reopening: the canary first, the others not until
    // it is healthy and has soaked.
    f.kill_hub(0);
    f.rollout_tick = "200ms";
    f.start_hub(0).await;
    f.recorder.wait_applied(0, &rev(3)).await;
    let restaged = f.rollout().await.expect("the new rollout");
    assert_ne!(restaged["id"], id, "a new opening starts a new rollout");
    let first = of_rollout(&f.rollout_audit().await, restaged["id"].as_str().unwrap());
    assert_eq!(
        releases(&first).first(),
        Some(&(1, names(&[0]))),
        "{first:#?}"
    );
    // Waves 1 and 2 have revision 3, in wave order; wave 2 soaks.
    for i in 0..3 {
        f.recorder.wait_applied(i, &rev(3)).await;
    }
    assert_wave_order(&f, &rev(3));
    let running = f.rollout().await.expect("the new rollout");
    assert_eq!(running["id"], restaged["id"]);
    f.api(
        Method::POST,
        &format!("/gates/{GATE}/close"),
        json!({"reason": "e2e: freeze mid-rollout"}),
    )
    .await;
    // Every released cluster closes at once: no wave order, no soak.
    for i in 0..6 {
        f.wait_suspended(i, true).await;
    }
    let ended = f
        .wait_rollout("rollout ended by the freeze", |r| state_is(r, "ended"))
        .await;
    assert_eq!(ended["id"], running["id"]);
    assert_eq!(ended["detail"], "the gate closed", "{ended}");
    for i in 3..6 {
        assert!(
            !f.recorder.attempted(i).contains(&rev(3)),
            "cluster {i} never saw revision 3: {:?}",
            f.recorder.attempted(i)
        );
        assert!(f.recorder.latest(i).suspended);
    }
    let steps = of_rollout(&f.rollout_audit().await, ended["id"].as_str().unwrap());
    assert_eq!(
        releases(&steps),
        three_releases()[..2].to_vec(),
        "{steps:#?}"
    );
    assert_eq!(steps.last().map(|s| s.action.as_str()), Some("rollout.end"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_revision_halts_on_the_canary_and_resume_after_a_good_one_completes() {
    let mut f = Fleet::start("bad", 6, 1).await;
    f.api(Method::POST, "/gates", gate(None, "1s", "8s")).await;
    spokes_holding(&mut f).await;
    f.push_all(2, false).await;
    // A gate-wide open override is an opening like any other: it starts a rollout.
    open_gate(&f, "e2e: release revision 2").await;
    let halted = f
        .wait_rollout("rollout halted", |r| state_is(r, "halted"))
        .await;
    assert_eq!(halted["wave"], 1, "halted on wave 1 (the canary): {halted}");
    let detail = halted["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("cluster-000") && detail.contains("revision 2 breaks the app"),
        "the halt names the canary and its Ready message: {detail}"
    );
    let canary = &halted["waves"][0]["clusters"][0];
    assert_eq!(canary["health"], "failed", "{halted}");
    // The canary tried revision 2 and failed; nobody else ever saw it.
    assert!(f.recorder.attempted(0).contains(&rev(2)));
    assert_eq!(f.recorder.latest(0).applied, Some(rev(1)));
    for i in 1..6 {
        let seen = f.recorder.latest(i);
        assert!(seen.suspended, "cluster {i} stays closed: {seen:?}");
        assert!(!f.recorder.attempted(i).contains(&rev(2)), "cluster {i}");
    }

    // A good revision follows; resume judges the canary afresh and completes.
    f.push_all(3, true).await;
    f.recorder.wait_applied(0, &rev(3)).await;
    f.api(
        Method::POST,
        &format!("/gates/{GATE}/rollout/resume"),
        Value::Null,
    )
    .await;
    f.wait_rollout("rollout completed after resume", |r| {
        state_is(r, "completed")
    })
    .await;
    for i in 0..6 {
        f.recorder.wait_applied(i, &rev(3)).await;
    }
    assert_wave_order(&f, &rev(3));
    for i in 1..6 {
        let history = f.recorder.history(i);
        assert!(
            !history.contains(&rev(2)) && history.ends_with(&[rev(1), rev(3)]),
            "cluster {i} went from revision 1 to 3, never 2: {history:?}"
        );
        assert!(!f.recorder.attempted(i).contains(&rev(2)), "cluster {i}");
    }
    let steps = of_rollout(&f.rollout_audit().await, halted["id"].as_str().unwrap());
    assert_eq!(releases(&steps), three_releases(), "{steps:#?}");
    let actions: Vec<&str> = steps.iter().map(|s| s.action.as_str()).collect();
    let halt = actions.iter().position(|a| *a == "rollout.halt");
    let resume = actions.iter().position(|a| *a == "rollout.resume");
    assert!(halt.is_some() && halt < resume, "{actions:?}");
}

/// The number of `action` steps in `steps`.
fn count(steps: &[Step], action: &str) -> usize {
    steps.iter().filter(|s| s.action == action).count()
}

/// Starts every spoke and waits until every Kustomization is held by the closed gate.
async fn spokes_holding(f: &mut Fleet) {
    f.start_spokes();
    for i in 0..6 {
        f.wait_suspended(i, true).await;
    }
}

async fn open_gate(f: &Fleet, reason: &str) {
    f.api(
        Method::POST,
        &format!("/gates/{GATE}/open"),
        json!({ "reason": reason }),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_killed_mid_soak_continues_where_it_was() {
    let mut f = Fleet::start("restart", 6, 1).await;
    f.api(Method::POST, "/gates", gate(None, "4s", "30s")).await;
    spokes_holding(&mut f).await;
    f.push_all(2, true).await;
    open_gate(&f, "e2e: release revision 2").await;
    let soaking = f
        .wait_rollout("wave 1 healthy, soaking", |r| {
            r["wave"] == 1 && r["soakUntil"].is_string()
        })
        .await;
    let soak_until: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(soaking["soakUntil"].clone()).unwrap();

    f.kill_hub(0);
    f.start_hub(0).await;
    let done = f
        .wait_rollout("rollout completed after the restart", |r| {
            state_is(r, "completed")
        })
        .await;
    assert_eq!(done["id"], soaking["id"], "the same rollout continued");
    for i in 0..6 {
        f.recorder.wait_applied(i, &rev(2)).await;
    }
    assert_wave_order(&f, &rev(2));
    let steps = of_rollout(&f.rollout_audit().await, done["id"].as_str().unwrap());
    assert_eq!(releases(&steps), three_releases(), "{steps:#?}");
    assert_eq!(count(&steps, "rollout.start"), 1, "{steps:#?}");
    // Wave 1 was not judged again after the restart, and its soak was not cut short.
    let healthy: Vec<i64> = steps
        .iter()
        .filter(|s| s.action == "rollout.healthy")
        .map(|s| s.wave)
        .collect();
    assert_eq!(healthy, vec![1, 2, 3], "{steps:#?}");
    let wave2 = steps
        .iter()
        .find(|s| s.action == "rollout.release" && s.wave == 2)
        .unwrap();
    assert!(
        wave2.at >= soak_until,
        "wave 2 released at {} before the soak's end {soak_until}",
        wave2.at
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_step_each_wave_once_and_an_offline_spoke_fails_its_wave() {
    let mut f = Fleet::start("replicas", 6, 2).await;
    f.api(Method::POST, "/gates", gate(None, "1s", "8s")).await;
    spokes_holding(&mut f).await;
    // The spokes are split over both replicas.
    fleetgate_tests::poll("spokes on both replicas", || async {
        let list = f.get("/clusters").await?;
        let replicas: std::collections::BTreeSet<String> = list["items"]
            .as_array()?
            .iter()
            .filter(|c| c["connected"] == true)
            .filter_map(|c| c["connectedReplica"].as_str().map(str::to_owned))
            .collect();
        let all = list["items"]
            .as_array()?
            .iter()
            .all(|c| c["connected"] == true);
        (all && replicas.len() == 2).then_some(())
    })
    .await;

    // cluster-002 (wave 2) goes offline before the opening.
    f.stop_spoke(2);
    fleetgate_tests::poll("cluster-002 disconnected", || async {
        let c = f.get("/clusters/cluster-002").await?;
        (c["connected"] == false).then_some(())
    })
    .await;
    f.push_all(2, true).await;
    open_gate(&f, "e2e: release revision 2").await;
    let halted = f
        .wait_rollout("rollout halted on wave 2", |r| state_is(r, "halted"))
        .await;
    assert_eq!(halted["wave"], 2, "{halted}");
    let detail = halted["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("cluster-002: spoke disconnected past the health timeout"),
        "{detail}"
    );
    f.recorder.wait_applied(1, &rev(2)).await;
    // Offline is fail-safe: cluster-002 stayed closed; wave 3 was never released.
    assert!(f.recorder.latest(2).suspended);
    for i in 2..6 {
        assert!(!f.recorder.attempted(i).contains(&rev(2)), "cluster {i}");
    }

    // Back online (on the other replica); resume completes the rollout.
    f.start_spoke(2, 1);
    f.api(
        Method::POST,
        &format!("/gates/{GATE}/rollout/resume"),
        Value::Null,
    )
    .await;
    let done = f
        .wait_rollout("rollout completed after resume", |r| {
            state_is(r, "completed")
        })
        .await;
    for i in 0..6 {
        f.recorder.wait_applied(i, &rev(2)).await;
    }
    assert_wave_order(&f, &rev(2));
    // Two drivers, each step once.
    let steps = of_rollout(&f.rollout_audit().await, done["id"].as_str().unwrap());
    assert_eq!(releases(&steps), three_releases(), "{steps:#?}");
    for action in ["rollout.start", "rollout.halt", "rollout.complete"] {
        assert_eq!(count(&steps, action), 1, "{action}: {steps:#?}");
    }
}

/// The gate for the late-failure tests: `failureGrace` set, soak long enough that the canary's
/// late failure falls inside it.
fn late_gate(soak: &str, grace: &str) -> Value {
    let mut g = gate(None, soak, "20s");
    g["spec"]["rollout"]["failureGrace"] = json!(grace);
    g
}

/// Starts every spoke of a three-cluster fleet (canary cluster-000, early cluster-001..002)
/// and waits until every Kustomization is held by the closed gate.
async fn three_holding(f: &mut Fleet) {
    f.start_spokes();
    for i in 0..3 {
        f.wait_suspended(i, true).await;
    }
}

/// Issue 32 item 6: the canary applies revision 2, turns healthy (the wave soaks), and only
/// then its Kustomization turns Ready=False and stays so: the rollout halts once it has been
/// Ready=False for `failureGrace` — counted from when it turned, not from the release — and
/// `fleetgate rollout status` / `fleetgate status` say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_failing_late_halts_after_failure_grace() {
    let mut f = Fleet::start("late", 3, 1).await;
    f.api(Method::POST, "/gates", late_gate("60s", "3s")).await;
    three_holding(&mut f).await;
    f.push_late(0, 2, "4s", None).await;
    f.push(1, 2, true).await;
    f.push(2, 2, true).await;
    open_gate(&f, "e2e: revision 2 fails late").await;
    f.recorder.wait_applied(0, &rev(2)).await;
    f.wait_rollout("the canary healthy, soaking", |r| {
        r["waves"][0]["state"] == "soaking"
    })
    .await;
    let failed = f
        .recorder
        .wait(0, "the canary Ready=False", |s| {
            s.ready.as_deref() == Some("False")
        })
        .await;
    let turned = chrono::Utc::now();
    assert_eq!(failed.applied, Some(rev(2)), "failing at the new revision");
    let halted = f
        .wait_rollout("rollout halted", |r| state_is(r, "halted"))
        .await;
    let steps = of_rollout(&f.rollout_audit().await, halted["id"].as_str().unwrap());
    let at = |action: &str| steps.iter().find(|s| s.action == action).map(|s| s.at);
    let (healthy, halt) = (at("rollout.healthy").unwrap(), at("rollout.halt").unwrap());
    assert!(healthy < halt, "{steps:#?}");
    // Ready=False for the grace (3 s) before the halt: not at once (the release was long ago).
    assert!(
        halt - turned >= chrono::Duration::milliseconds(2_500),
        "halted {} ms after the canary turned Ready=False",
        (halt - turned).num_milliseconds()
    );
    let detail = halted["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("cluster-000") && detail.contains("revision 2 degrades after 4s"),
        "{detail}"
    );
    for i in 1..3 {
        assert!(
            !f.recorder.attempted(i).contains(&rev(2)),
            "cluster {i} never got revision 2"
        );
    }
    // What an SRE reads.
    let status = f.cli(&["rollout", "status", GATE]);
    assert!(status.contains(" halted "), "{status}");
    assert!(status.contains("revision 2 degrades after 4s"), "{status}");
    assert!(
        !status.contains("healthy by"),
        "a halted wave has no deadline: {status}"
    );
    let fleet = f.cli(&["status"]);
    let canary = fleet
        .lines()
        .find(|l| l.starts_with("cluster-000"))
        .unwrap();
    assert!(canary.contains(" Failed "), "{fleet}");
    assert!(canary.contains("rollout wave 1 'canary' failed"), "{fleet}");
}

/// The canary turns Ready=False for 1 s, shorter than `failureGrace` (4 s), then Ready again:
/// the rollout does not halt and completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_failing_briefly_within_failure_grace_does_not_halt() {
    let mut f = Fleet::start("blip", 3, 1).await;
    f.api(Method::POST, "/gates", late_gate("8s", "4s")).await;
    three_holding(&mut f).await;
    f.push_late(0, 2, "2s", Some("1s")).await;
    f.push(1, 2, true).await;
    f.push(2, 2, true).await;
    open_gate(&f, "e2e: revision 2 blips").await;
    f.recorder.wait_applied(0, &rev(2)).await;
    f.recorder
        .wait(0, "the canary Ready=False", |s| {
            s.ready.as_deref() == Some("False")
        })
        .await;
    f.recorder
        .wait(0, "the canary Ready again", |s| {
            s.ready.as_deref() == Some("True")
        })
        .await;
    let done = f
        .wait_rollout("rollout completed", |r| {
            state_is(r, "completed") || state_is(r, "halted")
        })
        .await;
    assert_eq!(done["state"], "completed", "{done}");
    for i in 0..3 {
        f.recorder.wait_applied(i, &rev(2)).await;
    }
    let steps = of_rollout(&f.rollout_audit().await, done["id"].as_str().unwrap());
    assert_eq!(count(&steps, "rollout.halt"), 0, "{steps:#?}");
    let status = f.cli(&["rollout", "status", GATE]);
    assert!(status.contains(" completed "), "{status}");
}
