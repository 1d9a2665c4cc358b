//! Teams and approvals: the access policies of `examples/access/` (as
//! `fleetgate access-policy apply -f examples/access/` applies them), an API
//! token `payments-ci` for the payments team (named by
//! `examples/access/team-payments.yaml`, scoped like it), and one request by
//! that team to open `sre-approval` (`examples/sre-approval.yaml`, which has
//! `spec.approval`): it waits for a second person, the demo's admin, so the
//! dashboard's Approvals page has an "Approve" to click.

use std::path::Path;
use std::time::Duration;

use fleetgate_api_types::{
    ApiToken, ApiTokenWithSecret, Cluster, GateRecord, OverrideOutcome, parse_access_policy,
};
use serde_json::json;

use crate::other;
use fleetgate::args::{AccessPolicyCmd, Format};
use fleetgate::client::{Client, seg};
use fleetgate::config::Connection;
use fleetgate::error::{Error, Result};

/// The team's policy file (in `examples/access/`) and the token it names.
pub const POLICY: &str = "team-payments";
pub const TOKEN_NAME: &str = "payments-ci";
/// The approval gate and the cluster the team asks to open it on.
pub const APPROVAL_GATE: &str = "sre-approval";
pub const APPROVAL_CLUSTER: &str = "prod-eu-1";

/// The team as the demo set it up.
#[derive(Debug)]
pub struct Team {
    /// The team's API token (its secret).
    pub token: String,
    /// What the token may see, as the hub answers it: cluster and gate names.
    pub clusters: Vec<String>,
    pub gates: Vec<String>,
    /// The role the team's policy grants.
    pub role: String,
}

/// Applies every policy in `examples/access/` and creates the team's token,
/// scoped as its policy is (on a reused database the old token is revoked
/// first). Returns the token's secret and the policy's role.
pub async fn setup(client: &Client, examples: &Path) -> Result<(String, String)> {
    let dir = examples.join("access");
    fleetgate::commands::access_policy::run(
        client,
        &AccessPolicyCmd::Apply {
            files: vec![dir.clone()],
            reason: Some("demo: the payments team operates its own gates".into()),
            prune: false,
        },
        Format::Table,
    )
    .await?;
    let file = dir.join(format!("{POLICY}.yaml"));
    let text = std::fs::read_to_string(&file).map_err(|e| other("examples", e))?;
    let policy = parse_access_policy(&text).map_err(|e| other("examples", e))?;
    if !policy.spec.subjects.tokens.iter().any(|t| t == TOKEN_NAME) {
        return Err(other(
            "examples",
            format!("{} names no token {TOKEN_NAME}", file.display()),
        ));
    }
    // The token's own role is the lowest: the policy grants the rest, in its scope.
    let body = json!({"name": TOKEN_NAME, "role": "viewer", "scope": policy.spec.scope});
    let created: ApiTokenWithSecret = match client.post("/tokens", &[], &body).await {
        Ok(t) => t,
        Err(Error::Api { status: 409, .. }) => {
            let old = client
                .list::<ApiToken>("/tokens", &[], None)
                .await?
                .into_iter()
                .filter(|t| t.name == TOKEN_NAME && t.revoked_at.is_none());
            for t in old {
                let _: serde_json::Value = client.delete(&format!("/tokens/{}", t.id), &[]).await?;
            }
            client.post("/tokens", &[], &body).await?
        }
        Err(e) => return Err(e),
    };
    Ok((created.secret, policy.spec.role.as_str().to_string()))
}

/// A client acting as the team (its own token).
pub fn client(hub: &str, token: &str) -> Result<Client> {
    Client::new(Connection {
        hub: hub.to_string(),
        token: Some(token.to_string()),
        timeout: Duration::from_secs(30),
    })
}

/// What the team's token sees: the clusters and gates the hub lists to it.
pub async fn sees(team: &Client) -> Result<(Vec<String>, Vec<String>)> {
    let clusters = team
        .list::<Cluster>("/clusters", &[], None)
        .await?
        .into_iter()
        .map(|c| c.name)
        .collect();
    let gates = team
        .list::<GateRecord>("/gates", &[], None)
        .await?
        .into_iter()
        .map(|g| g.name)
        .collect();
    Ok((clusters, gates))
}

/// The team asks to open the approval gate on its cluster for an hour: a pending request,
/// whose id is returned.
pub async fn request_opening(team: &Client) -> Result<String> {
    let outcome: OverrideOutcome = team
        .post(
            &format!("/gates/{}/open", seg(APPROVAL_GATE)),
            &[],
            &json!({
                "for": "1h",
                "reason": "demo: payments release 2026.12 to production",
                "ticket": "CHG-1234",
                "clusters": {"names": [APPROVAL_CLUSTER]},
            }),
        )
        .await?;
    match outcome {
        OverrideOutcome::Pending(r) => Ok(r.id.to_string()),
        OverrideOutcome::Created(o) => Err(other(
            "approval",
            format!(
                "{APPROVAL_GATE} opened at once (override {}): the gate has no spec.approval",
                o.id
            ),
        )),
    }
}
