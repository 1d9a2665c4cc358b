//! Scoped API tokens over gRPC read only their team's gates, clusters, fleet status and
//! audit entries; operators override only their part (a gate-wide close is narrowed to
//! their clusters), admins write gates only inside the scope, and no scoped token lists
//! access policies.

use fleetgate_proto::v1 as pb;
use tonic::Code;

use crate::grpc_support::{Grpc, authed};
use crate::{code, fleet, gate_yaml};

#[tokio::test]
async fn scoped_tokens_over_grpc_see_and_change_only_their_part() {
    let (hub, [viewer, operator, admin_t]) = fleet().await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut api = grpc.admin();

    // Reads: only the team's gates and clusters; the others are 403.
    for t in [&viewer, &operator, &admin_t] {
        let gates: Vec<String> = api
            .list_gates(authed(pb::ListGatesRequest::default(), t))
            .await
            .unwrap()
            .into_inner()
            .gates
            .into_iter()
            .map(|g| g.name)
            .collect();
        assert_eq!(gates, ["mixed", "pay"]);
        let clusters: Vec<String> = api
            .list_clusters(authed(pb::ListClustersRequest::default(), t))
            .await
            .unwrap()
            .into_inner()
            .clusters
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(clusters, ["pay-1", "pay-2"]);
        let get = pb::GetGateRequest { name: "web".into() };
        assert_eq!(
            code(api.get_gate(authed(get, t)).await),
            Code::PermissionDenied
        );
        let status = pb::GetClusterStatusRequest {
            name: "web-1".into(),
        };
        assert_eq!(
            code(api.get_cluster_status(authed(status, t)).await),
            Code::PermissionDenied
        );
        let fleet = api
            .get_fleet_status(authed(pb::GetFleetStatusRequest {}, t))
            .await
            .unwrap()
            .into_inner();
        let summary: Vec<(String, u64)> = fleet
            .gates
            .iter()
            .map(|g| (g.gate.clone(), g.clusters))
            .collect();
        assert_eq!(summary, [("mixed".into(), 2), ("pay".into(), 2)]);
        // Access policies are for unscoped admins only, even a scoped admin.
        assert_eq!(
            code(
                api.list_access_policies(authed(pb::ListAccessPoliciesRequest::default(), t))
                    .await
            ),
            Code::PermissionDenied
        );
    }

    // Operators: their gate on their clusters; a gate-wide close of the mixed
    // gate covers their clusters only and says so; naming web-1 is 403.
    let close = |gate: &str, clusters: &[&str]| pb::CreateOverrideRequest {
        gate: gate.into(),
        state: "closed".into(),
        r#for: "1h".into(),
        reason: "scope".into(),
        clusters: clusters.iter().map(|c| c.to_string()).collect(),
        ..Default::default()
    };
    assert_eq!(
        code(
            api.create_override(authed(close("pay", &[]), &viewer))
                .await
        ),
        Code::PermissionDenied
    );
    assert_eq!(
        code(
            api.create_override(authed(close("web", &[]), &operator))
                .await
        ),
        Code::PermissionDenied
    );
    assert_eq!(
        code(
            api.create_override(authed(close("mixed", &["web-1"]), &operator))
                .await
        ),
        Code::PermissionDenied
    );
    let o = api
        .create_override(authed(close("mixed", &[]), &operator))
        .await
        .unwrap()
        .into_inner();
    assert!(o.narrowed.contains("cluster scope"), "{o:?}");
    assert!(o.cluster_selector_json.contains("payments"), "{o:?}");

    // Admins: write gates inside the scope only.
    let create = |yaml: String| pb::CreateGateRequest {
        manifest: yaml,
        reason: String::new(),
    };
    let ok = gate_yaml("pay-2nd", "payments", "{names: [pay-1]}");
    assert_eq!(
        code(api.create_gate(authed(create(ok.clone()), &operator)).await),
        Code::PermissionDenied
    );
    assert_eq!(
        code(api.create_gate(authed(create(ok), &admin_t)).await),
        Code::Ok
    );
    let other_team = gate_yaml("web-2nd", "web", "{names: [web-1]}");
    assert_eq!(
        code(api.create_gate(authed(create(other_team), &admin_t)).await),
        Code::PermissionDenied
    );
    let too_wide = gate_yaml("pay-all", "payments", "{selector: {}}");
    assert_eq!(
        code(api.create_gate(authed(create(too_wide), &admin_t)).await),
        Code::PermissionDenied
    );

    // The audit log: only entries about the team's things.
    let audit = api
        .list_audit(authed(pb::ListAuditRequest::default(), &viewer))
        .await
        .unwrap()
        .into_inner()
        .entries;
    assert!(!audit.is_empty());
    for e in &audit {
        assert!(
            ["pay", "mixed", "pay-2nd", "pay-1", "pay-2"].contains(&e.target_name.as_str()),
            "{e:?}"
        );
    }
    grpc.stop().await;
}
