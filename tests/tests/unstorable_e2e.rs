//! End to end, all real processes (simulator, PostgreSQL, hub, spokes): a
//! Kustomization whose Ready message holds U+0000, as a build error quoting a
//! binary file does (issue 40). The cluster's report is stored, the object
//! shows its message with U+FFFD in place of the NUL and is listed under the
//! cluster's `reportProblems`, and the cluster's other objects (and the
//! other cluster) keep updating.

mod rollout_support;

use fleetgate_tests::poll;
use rollout_support::{Fleet, NS, rev};
use serde_json::{Value, json};

const MESSAGE: &str = "kustomize build failed: bad byte \u{0} here";

fn object<'a>(status: &'a Value, kind: &str, name: &str) -> Option<&'a Value> {
    status["objects"]
        .as_array()?
        .iter()
        .find(|o| o["kind"] == kind && o["name"] == name)
}

/// Pushes revision `n` to cluster `i`, failing with [`MESSAGE`].
async fn push_nul(f: &Fleet, i: usize, n: u32) {
    let body = json!({
        "kind": "GitRepository", "namespace": NS, "name": "repo", "revision": rev(n),
        "manifests": {"apps": format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: app, namespace: {NS}}}\ndata: {{revision: \"{n}\"}}\n")},
        "ready": false, "message": MESSAGE,
    });
    let url = format!("{}/sim/v1/push", f.clusters[i].url);
    let r = f.http.post(url).json(&body).send().await.unwrap();
    assert!(r.status().is_success(), "push: {}", r.status());
}

#[tokio::test]
async fn a_nul_in_a_ready_message_is_stored_replaced_and_the_rest_keeps_updating() {
    let mut f = Fleet::start("nul", 2, 1).await;
    f.api(
        reqwest::Method::POST,
        "/gates",
        json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "watch"},
            "spec": {"clusters": {"selector": {}}, "default": "open",
                     "targets": {"kinds": ["Kustomization", "GitRepository"]}},
        }),
    )
    .await;
    f.start_spokes();
    let (c0, c1) = (f.name(0), f.name(1));
    push_nul(&f, 0, 2).await;
    f.push(1, 2, true).await;

    let replaced = MESSAGE.replace('\u{0}', "\u{FFFD}");
    let st = poll("the NUL message stored with U+FFFD", || async {
        let st = f.get(&format!("/clusters/{c0}/status")).await?;
        let apps = object(&st, "Kustomization", "apps")?;
        (apps["readyMessage"] == replaced.as_str()).then_some(st)
    })
    .await;
    assert_eq!(
        object(&st, "Kustomization", "apps").unwrap()["ready"],
        "False"
    );
    let problems = &st["reportProblems"];
    assert!(problems["total"].as_u64() >= Some(1), "{st}");
    let item = problems["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["object"] == format!("Kustomization {NS}/apps"))
        .unwrap_or_else(|| panic!("apps not listed: {st}"));
    assert_eq!(item["action"], "replaced", "{st}");
    assert!(
        item["field"].as_str().unwrap().ends_with("ready_message"),
        "{st}"
    );
    assert_eq!(problems["writeError"], Value::Null, "{st}");

    // The other cluster is not held up.
    poll("the other cluster applies revision 2", || async {
        let st = f.get(&format!("/clusters/{c1}/status")).await?;
        let apps = object(&st, "Kustomization", "apps")?;
        (apps["lastAppliedRevision"] == rev(2).as_str()).then_some(())
    })
    .await;

    // The odd cluster's other object keeps updating while apps still fails.
    push_nul(&f, 0, 3).await;
    poll("the GitRepository shows revision 3", || async {
        let st = f.get(&format!("/clusters/{c0}/status")).await?;
        let repo = object(&st, "GitRepository", "repo")?;
        repo.to_string().contains(&rev(3)).then_some(())
    })
    .await;

    // A good revision clears the problem.
    f.push(0, 4, true).await;
    poll("revision 4 applied and the problem gone", || async {
        let st = f.get(&format!("/clusters/{c0}/status")).await?;
        let apps = object(&st, "Kustomization", "apps")?;
        (apps["lastAppliedRevision"] == rev(4).as_str() && st["reportProblems"]["total"] == 0)
            .then_some(())
    })
    .await;
}
