//! `WatchFleet` for a scoped viewer: the initial state and every later event are about
//! the team's gates and clusters only.

use fleetgate_proto::v1::{self as pb, fleet_event::Event};

use crate::fleet;
use crate::grpc_support::{Grpc, authed, within};

/// The next event of a WatchFleet stream (bounded).
async fn next_event(s: &mut tonic::Streaming<pb::FleetEvent>) -> pb::FleetEvent {
    within("a fleet event", s.message())
        .await
        .unwrap()
        .expect("stream ended")
}

/// The (gate, cluster) a gate-state or override event is about.
fn about(e: &pb::FleetEvent) -> (String, String) {
    match e.event.as_ref().unwrap() {
        Event::GateState(g) => (g.gate.clone(), g.cluster.clone()),
        Event::Override(o) => {
            let o = o.r#override.as_ref().unwrap();
            (o.gate.clone(), o.clusters.join(","))
        }
        Event::Spoke(s) => (String::new(), s.cluster.clone()),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn watch_fleet_streams_only_the_scope() {
    let (hub, [viewer, _, _]) = fleet().await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut api = grpc.admin();
    let mut events = api
        .watch_fleet(authed(pb::WatchFleetRequest::default(), &viewer))
        .await
        .unwrap()
        .into_inner();
    // The initial state: (gate, cluster) of pay and mixed on pay-1/pay-2, and
    // the two clusters' connections; nothing of web or web-1.
    let mut initial = Vec::new();
    for _ in 0..6 {
        let e = next_event(&mut events).await;
        assert!(e.initial, "{e:?}");
        initial.push(about(&e));
    }
    initial.sort();
    let want: Vec<(String, String)> = [
        ("", "pay-1"),
        ("", "pay-2"),
        ("mixed", "pay-1"),
        ("mixed", "pay-2"),
        ("pay", "pay-1"),
        ("pay", "pay-2"),
    ]
    .iter()
    .map(|(g, c)| (g.to_string(), c.to_string()))
    .collect();
    assert_eq!(initial, want);

    // web closes first, then pay: the watcher hears of pay only. A later
    // in-scope change (pay reopened) proves nothing of web was merely late.
    let close = |gate: &str| pb::CreateOverrideRequest {
        gate: gate.into(),
        state: "closed".into(),
        r#for: "1h".into(),
        reason: "scope".into(),
        ..Default::default()
    };
    api.create_override(authed(close("web"), &hub.admin))
        .await
        .unwrap();
    let pay = api
        .create_override(authed(close("pay"), &hub.admin))
        .await
        .unwrap()
        .into_inner();
    // Views are diffed and the feed skips views in between: wait for pay's
    // close before reopening it, or both could fall between two reads.
    let mut closed = 0;
    while closed < 2 {
        let e = next_event(&mut events).await;
        let (gate, cluster) = about(&e);
        assert_eq!(gate, "pay", "{e:?}");
        assert!(!cluster.contains("web"), "{e:?}");
        if let Some(Event::GateState(g)) = &e.event
            && g.to == "closed"
        {
            closed += 1;
        }
    }
    api.cancel_override(authed(
        pb::CancelOverrideRequest {
            id: pay.id.clone(),
            reason: "done".into(),
        },
        &hub.admin,
    ))
    .await
    .unwrap();
    let mut reopened = 0;
    while reopened < 2 {
        let e = next_event(&mut events).await;
        let (gate, cluster) = about(&e);
        assert_eq!(gate, "pay", "{e:?}");
        assert!(!cluster.contains("web"), "{e:?}");
        if let Some(Event::GateState(g)) = &e.event
            && g.to == "open"
        {
            reopened += 1;
        }
    }
    grpc.stop().await;
}
