//! `token create|list|revoke`: API tokens with a role (viewer, operator,
//! admin). The secret is printed once; the hub keeps only its hash.

use fleetgate_api_types::{AccessScope, ApiToken, ApiTokenWithSecret, CreateToken};

use crate::args::{Format, TokenCmd};
use crate::client::{Client, reason, seg};
use crate::error::{Error, Result};
use crate::output::{self, Table};

pub async fn run(client: &Client, cmd: &TokenCmd, format: Format) -> Result<()> {
    match cmd {
        TokenCmd::Create {
            name,
            role,
            scope,
            reason: why,
        } => {
            let body = CreateToken {
                name: name.clone(),
                role: role.clone(),
                scope: scope.as_deref().map(parse_scope).transpose()?,
            };
            let v: ApiTokenWithSecret = client.post("/tokens", &reason(why), &body).await?;
            output::print_answer(format, &v, |v| {
                format!(
                    "token/{name} created (role {role})\nsecret (shown once):\n{}\n",
                    v.secret
                )
            })
        }
        TokenCmd::List => {
            let items: Vec<ApiToken> = client.list("/tokens", &[], None).await?;
            output::print_answer(format, &items, |items| render(items))
        }
        TokenCmd::Revoke {
            name_or_id,
            reason: why,
        } => {
            let id = resolve(client, name_or_id).await?;
            let v: ApiToken = client
                .delete(&format!("/tokens/{}", seg(&id)), &reason(why))
                .await?;
            output::print_answer(format, &v, |_| format!("token/{name_or_id} revoked\n"))
        }
    }
}

/// Token ids are UUIDs; a name is looked up among the live tokens.
async fn resolve(client: &Client, name_or_id: &str) -> Result<String> {
    let items: Vec<ApiToken> = client.list("/tokens", &[], None).await?;
    let found = items.iter().find(|t| {
        (t.name == name_or_id || t.id.to_string() == name_or_id) && t.revoked_at.is_none()
    });
    match found {
        Some(t) => Ok(t.id.to_string()),
        None => Err(Error::Api {
            status: 404,
            code: "not_found".into(),
            message: format!("no live API token named '{name_or_id}'"),
            field: None,
        }),
    }
}

fn render(items: &[ApiToken]) -> String {
    if items.is_empty() {
        return "No API tokens.\n".into();
    }
    let mut t = Table::new(&[
        "NAME", "ROLE", "CLUSTERS", "GATES", "CREATED", "REVOKED", "ID",
    ]);
    for tok in items {
        let [clusters, gates] = super::access_policy::scope_columns(tok.scope.as_ref());
        t.row(vec![
            tok.name.clone(),
            tok.role.clone(),
            clusters,
            gates,
            output::time(&tok.created_at),
            output::time_or_empty(tok.revoked_at.as_ref()),
            tok.id.to_string(),
        ]);
    }
    t.render()
}

/// `--scope`: YAML or JSON text, or `@FILE`; the hub validates it again and
/// names the field.
fn parse_scope(arg: &str) -> Result<AccessScope> {
    let text = match arg.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?,
        None => arg.to_string(),
    };
    fleetgate_policy::yaml::from_str(&text).map_err(|e| Error::invalid("--scope", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_shows_each_tokens_scope() {
        let token = |name: &str, scope: Option<serde_json::Value>| -> ApiToken {
            serde_json::from_value(serde_json::json!({
                "id": "00000000-0000-0000-0000-000000000001", "name": name, "role": "operator",
                "createdAt": "2026-11-25T12:00:00Z", "revokedAt": null, "scope": scope,
            }))
            .unwrap()
        };
        let out = render(&[
            token("ci", None),
            token(
                "payments-ci",
                Some(serde_json::json!({
                    "clusters": {"selector": {"matchLabels": {"team": "payments"}}},
                    "gates": {"names": ["payments-prod"]}})),
            ),
        ]);
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].contains("CLUSTERS") && lines[0].contains("GATES"),
            "{out}"
        );
        let ci: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(&ci[..4], ["ci", "operator", "*", "*"], "{out}");
        assert!(
            lines[2].contains(r#"{"selector":{"matchLabels":{"team":"payments"}}}"#)
                && lines[2].contains(r#"{"names":["payments-prod"]}"#),
            "{out}"
        );
    }
}
