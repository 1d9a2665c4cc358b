//! Access policies over gRPC: only an unscoped admin applies, lists, gets and deletes
//! them; apply is idempotent, versioned (a stale version is FAILED_PRECONDITION) and
//! validated (INVALID_ARGUMENT naming the field); changes are audited with the reason.

use fleetgate_proto::v1 as pb;
use tonic::Code;

use crate::code;
use crate::common::Hub;
use crate::grpc_support::{Grpc, audit_entries, authed};

#[tokio::test]
async fn access_policies_over_grpc() {
    let hub = Hub::new().await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut api = grpc.admin();
    let manifest = "apiVersion: fleetgate.io/v1\nkind: AccessPolicy\nmetadata: {name: team-payments}\n\
                    spec:\n  subjects: {groups: [payments]}\n  role: operator\n  scope:\n\
                    \x20   clusters: {selector: {matchLabels: {team: payments}}}\n";
    let apply = |m: &str, v: u64| pb::ApplyAccessPolicyRequest {
        manifest: m.into(),
        expected_version: v,
        reason: "onboarding".into(),
    };
    // Viewers and operators may not; an unscoped admin may.
    for t in [&hub.viewer, &hub.operator] {
        assert_eq!(
            code(api.apply_access_policy(authed(apply(manifest, 0), t)).await),
            Code::PermissionDenied
        );
    }
    let first = api
        .apply_access_policy(authed(apply(manifest, 0), &hub.admin))
        .await
        .unwrap()
        .into_inner();
    assert!(first.created);
    let p = first.policy.unwrap();
    assert_eq!((p.name.as_str(), p.version), ("team-payments", 1));
    let stored: serde_json::Value = serde_json::from_str(&p.manifest_json).unwrap();
    assert_eq!(stored["spec"]["role"], "operator");
    // The same manifest again: unchanged, not created, same version.
    let again = api
        .apply_access_policy(authed(apply(manifest, 1), &hub.admin))
        .await
        .unwrap()
        .into_inner();
    assert!(!again.created);
    assert_eq!(again.policy.unwrap().version, 1);
    // A stale version: FAILED_PRECONDITION; a bad field: INVALID_ARGUMENT naming it.
    let viewer_role = manifest.replace("role: operator", "role: viewer");
    let err = api
        .apply_access_policy(authed(apply(&viewer_role, 7), &hub.admin))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    let bad = manifest.replace("role: operator", "role: owner");
    let err = api
        .apply_access_policy(authed(apply(&bad, 0), &hub.admin))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("spec.role"), "{}", err.message());
    let err = api
        .apply_access_policy(authed(apply("", 0), &hub.admin))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("manifest"), "{}", err.message());

    let list = api
        .list_access_policies(authed(pb::ListAccessPoliciesRequest::default(), &hub.admin))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(list.policies.len(), 1);
    assert_eq!(list.next_cursor, "");
    let get = |n: &str| pb::GetAccessPolicyRequest { name: n.into() };
    assert_eq!(
        api.get_access_policy(authed(get("team-payments"), &hub.admin))
            .await
            .unwrap()
            .into_inner()
            .version,
        1
    );
    api.delete_access_policy(authed(
        pb::DeleteAccessPolicyRequest {
            name: "team-payments".into(),
            reason: "offboarding".into(),
        },
        &hub.admin,
    ))
    .await
    .unwrap();
    assert_eq!(
        code(
            api.get_access_policy(authed(get("team-payments"), &hub.admin))
                .await
        ),
        Code::NotFound
    );
    // Audited, with the reason.
    let audit = audit_entries(&mut api, "access_policy", &hub.admin).await;
    let actions: Vec<&str> = audit.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["access_policy.delete", "access_policy.create"]);
    assert_eq!(audit[0].reason, "offboarding");
    grpc.stop().await;
}
