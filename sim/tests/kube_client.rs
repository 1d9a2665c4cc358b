//! kube-rs against the simulator: discovery (`pinned_kind`, full `Discovery`), paged and
//! selected lists, and `kube::runtime::watcher` seeing every change exactly once across
//! watch restarts (resourceVersion resume) and relisting after a 410 Gone.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{CLUSTER, client, start};
use fleetgate_sim::SimConfig;
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{self, Discovery, Scope};
use kube::runtime::watcher::{self, Event};
use serde_json::json;
use tokio::sync::mpsc;

fn ks_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("kustomize.toolkit.fluxcd.io", "v1", "Kustomization")
}

#[tokio::test]
async fn discovery_lists_every_flux_kind() {
    let sim = start(SimConfig::with_clusters(1)).await;
    let client = client(&sim).await;
    let (ar, caps) = discovery::pinned_kind(&client, &ks_gvk()).await.unwrap();
    assert_eq!(ar.plural, "kustomizations");
    assert_eq!(caps.scope, Scope::Namespaced);
    assert!(
        caps.subresources
            .iter()
            .any(|(s, _)| s.plural == "kustomizations/status" || s.plural == "status")
    );
    let hr = GroupVersionKind::gvk("helm.toolkit.fluxcd.io", "v2", "HelmRelease");
    assert_eq!(
        discovery::pinned_kind(&client, &hr).await.unwrap().0.plural,
        "helmreleases"
    );

    let d = Discovery::new(client.clone()).run().await.unwrap();
    for group in [
        "kustomize.toolkit.fluxcd.io",
        "helm.toolkit.fluxcd.io",
        "source.toolkit.fluxcd.io",
        "image.toolkit.fluxcd.io",
        "events.k8s.io",
    ] {
        assert!(d.has_group(group), "discovery lacks {group}");
    }
    let kinds: Vec<String> = d
        .get("source.toolkit.fluxcd.io")
        .unwrap()
        .recommended_resources()
        .into_iter()
        .map(|(ar, _)| ar.kind)
        .collect();
    for k in [
        "GitRepository",
        "OCIRepository",
        "HelmRepository",
        "Bucket",
        "HelmChart",
    ] {
        assert!(kinds.iter().any(|x| x == k), "{kinds:?} lacks {k}");
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn kube_client_over_tls_with_the_generated_kubeconfig() {
    let sim = start(SimConfig {
        tls: true,
        ..SimConfig::with_clusters(1)
    })
    .await;
    assert!(sim.url(CLUSTER).unwrap().starts_with("https://127.0.0.1:"));
    let client = client(&sim).await;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|n| n.metadata.name.unwrap())
        .collect();
    assert!(names.contains(&"kube-system".to_string()), "{names:?}");
    sim.shutdown().await;
}

#[tokio::test]
async fn lists_page_and_select() {
    let sim = start(SimConfig::with_clusters(1)).await;
    sim.seed_fleet(20).await.unwrap();
    let client = client(&sim).await;
    let (ar, _) = discovery::pinned_kind(&client, &ks_gvk()).await.unwrap();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let all = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(all.items.len(), 12);

    let mut paged = Vec::new();
    let mut lp = ListParams::default().limit(5);
    loop {
        let page = api.list(&lp).await.unwrap();
        assert!(page.items.len() <= 5);
        paged.extend(page.items.into_iter().map(|o| o.metadata.name.unwrap()));
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => break,
        }
    }
    let names: Vec<String> = all
        .items
        .iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(paged, names, "pages cover the list once, in order");

    let team_a = api
        .list(&ListParams::default().labels("team=a,tier in (apps)"))
        .await
        .unwrap();
    assert!(!team_a.items.is_empty());
    assert!(
        team_a
            .items
            .iter()
            .all(|o| o.labels()["team"] == "a" && o.labels()["tier"] == "apps")
    );
    let one = api
        .list(&ListParams::default().fields("metadata.name=infra-000"))
        .await
        .unwrap();
    assert_eq!(one.items.len(), 1);
    let err = api
        .list(&ListParams::default().fields("spec.suspend=true"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 400),
        "{err}"
    );
    sim.shutdown().await;
}

type WatchItem = Result<Event<DynamicObject>, watcher::Error>;

async fn next(rx: &mut mpsc::UnboundedReceiver<WatchItem>) -> WatchItem {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("watch event within 10 s")
        .expect("stream open")
}

fn step_of(obj: &DynamicObject) -> Option<u32> {
    obj.labels().get("step").and_then(|s| s.parse().ok())
}

#[tokio::test]
async fn watcher_sees_every_change_once_across_restarts_and_relists_after_410() {
    // No bookmarks during the test, so the watcher resumes from the last event it saw.
    let sim = start(SimConfig {
        bookmark_interval: Duration::from_secs(3600),
        ..SimConfig::with_clusters(1)
    })
    .await;
    let client = client(&sim).await;
    let (ar, _) = discovery::pinned_kind(&client, &ks_gvk()).await.unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    // Suspended, so the Flux simulator never writes it: every event is ours.
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "watched", "namespace": "default", "labels": {"step": "0"}},
        "spec": {"interval": "5m", "prune": true, "suspend": true, "sourceRef": {"kind": "GitRepository", "name": "x"}},
    }))
    .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();

    // The server ends each watch after 1 s; the watcher resumes from its resourceVersion.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let stream = watcher::watcher(api.clone(), watcher::Config::default().timeout(1));
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            if tx.send(ev).is_err() {
                break;
            }
        }
    });
    // Initial list.
    loop {
        if let Ok(Event::InitDone) = next(&mut rx).await {
            break;
        }
    }

    let set_step = |step: u32| {
        let api = api.clone();
        async move {
            let p = json!({"metadata": {"labels": {"step": step.to_string()}}});
            api.patch("watched", &PatchParams::default(), &Patch::Merge(&p))
                .await
                .unwrap();
        }
    };
    let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
    // 12 changes spaced 300 ms apart span at least three 1 s server-side watch timeouts
    // (the spacing spreads changes across restarts; it synchronises nothing).
    let steps = 12;
    let watches_before = sim.watch_count(CLUSTER);
    for step in 1..=steps {
        set_step(step).await;
        loop {
            match next(&mut rx).await {
                Ok(Event::Apply(o)) => {
                    let s = step_of(&o).unwrap();
                    *seen.entry(s).or_default() += 1;
                    if s == step {
                        break;
                    }
                }
                other => panic!("unexpected watcher event {other:?}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let step = steps;
    assert!(
        sim.watch_count(CLUSTER) >= watches_before + 3,
        "the watcher re-watched at least three times"
    );
    assert!(
        seen.values().all(|n| *n == 1),
        "each change exactly once: {seen:?}"
    );
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        (1..=step).collect::<Vec<_>>()
    );

    // Compact history past the watcher's resourceVersion: its next re-watch gets 410
    // Gone and it relists.
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), "default");
    let cm = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bump"}}),
    )
    .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    sim.compact(CLUSTER).unwrap();
    let mut got_gone = false;
    loop {
        match next(&mut rx).await {
            Err(watcher::Error::WatchError(e)) => {
                assert_eq!(e.code, 410);
                got_gone = true;
            }
            Ok(Event::Init) => break,
            other => panic!("expected 410 then relist, got {other:?}"),
        }
    }
    assert!(got_gone, "relist follows a 410");
    match next(&mut rx).await {
        Ok(Event::InitApply(o)) => assert_eq!(step_of(&o), Some(step)),
        other => panic!("expected the object in the relist, got {other:?}"),
    }
    assert!(matches!(next(&mut rx).await, Ok(Event::InitDone)));
    set_step(step + 1).await;
    match next(&mut rx).await {
        Ok(Event::Apply(o)) => assert_eq!(step_of(&o), Some(step + 1)),
        other => panic!("expected the change after relist, got {other:?}"),
    }
    task.abort();
    sim.shutdown().await;
}
