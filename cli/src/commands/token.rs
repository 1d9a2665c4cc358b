//! `token create|list|revoke`: API tokens with a role (viewer, operator,
//! admin). The secret is printed once; the hub keeps only its hash.

use serde_json::{Value, json};

use crate::args::{Format, TokenCmd};
use crate::client::{Client, reason, seg};
use crate::error::{Error, Result};
use crate::output::{self, Table};

pub async fn run(client: &Client, cmd: &TokenCmd, format: Format) -> Result<()> {
    match cmd {
        TokenCmd::Create {
            name,
            role,
            reason: why,
        } => {
            let v = client
                .post(
                    "/tokens",
                    &reason(why),
                    &json!({"name": name, "role": role}),
                )
                .await?;
            output::print(format, &v, |v| {
                format!(
                    "token/{name} created (role {role})\nsecret (shown once):\n{}\n",
                    output::s(v, "secret")
                )
            })
        }
        TokenCmd::List => {
            let items = client.list("/tokens", &[], None).await?;
            output::print(format, &items, |items| render(items))
        }
        TokenCmd::Revoke {
            name_or_id,
            reason: why,
        } => {
            let id = resolve(client, name_or_id).await?;
            let v = client
                .delete(&format!("/tokens/{}", seg(&id)), &reason(why))
                .await?;
            output::print(format, &v, |_| format!("token/{name_or_id} revoked\n"))
        }
    }
}

/// Token ids are UUIDs; a name is looked up among the live tokens.
async fn resolve(client: &Client, name_or_id: &str) -> Result<String> {
    let items = client.list("/tokens", &[], None).await?;
    let found = items.iter().find(|t| {
        (output::s(t, "name") == name_or_id || output::s(t, "id") == name_or_id)
            && t.get("revokedAt").is_none_or(Value::is_null)
    });
    match found {
        Some(t) => Ok(output::s(t, "id")),
        None => Err(Error::Api {
            status: 404,
            code: "not_found".into(),
            message: format!("no live API token named '{name_or_id}'"),
            field: None,
        }),
    }
}

fn render(items: &[Value]) -> String {
    if items.is_empty() {
        return "No API tokens.\n".into();
    }
    let mut t = Table::new(&["NAME", "ROLE", "CREATED", "REVOKED", "ID"]);
    for tok in items {
        t.row(vec![
            output::s(tok, "name"),
            output::s(tok, "role"),
            output::s(tok, "createdAt"),
            output::s(tok, "revokedAt"),
            output::s(tok, "id"),
        ]);
    }
    t.render()
}
