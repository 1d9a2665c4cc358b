//! `fleetgate version`: this CLI's version and commit and the hub's (as
//! `kubectl version` does), and whether the two are within the skew policy.
//! The client's version prints even when the hub cannot be reached.

use fleetgate_api_types::version::{self, Skew, VersionInfo};
use serde::Serialize;

use crate::args::{Format, Global};
use crate::client::Client;
use crate::config;
use crate::error::{Error, Result};
use crate::output;

/// This CLI's version and the commit it was built from.
pub fn client_version() -> VersionInfo {
    VersionInfo {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        commit: env!("FLEETGATE_COMMIT").to_owned(),
    }
}

/// What `fleetgate version -o json` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Versions {
    pub client_version: VersionInfo,
    /// The hub asked (absent with `--client`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hub: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_version: Option<VersionInfo>,
    /// Why there is no server version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_error: Option<String>,
    /// The CLI against the hub: `supported` within one minor release.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skew: Option<Skew>,
}

pub async fn run(global: &Global, client_only: bool, format: Format) -> Result<()> {
    let mut out = Versions {
        client_version: client_version(),
        hub: None,
        server_version: None,
        server_error: None,
        skew: None,
    };
    let mut failed = None;
    if !client_only {
        let (hub, server) = server_version(global).await;
        out.hub = hub;
        match server {
            Ok(server) => {
                out.skew = Some(version::cli_skew(
                    &out.client_version.version,
                    &server.version,
                ));
                out.server_version = Some(server);
            }
            Err(e) => {
                out.server_error = Some(e.render());
                failed = Some(e);
            }
        }
    }
    output::print_answer(format, &out, table)?;
    if out.skew == Some(Skew::Unsupported) {
        eprintln!(
            "warning: this CLI ({}) and the hub ({}) are more than {} minor release apart; \
             use a CLI of the hub's release",
            out.client_version.version,
            out.server_version
                .as_ref()
                .map_or("", |s| s.version.as_str()),
            version::CLI_MINORS_APART
        );
    }
    failed.map_or(Ok(()), Err)
}

fn table(v: &Versions) -> String {
    let mut s = format!(
        "Client Version: {} (commit {})\n",
        v.client_version.version, v.client_version.commit
    );
    if let Some(server) = &v.server_version {
        s.push_str(&format!(
            "Server Version: {} (commit {})\n",
            server.version, server.commit
        ));
    }
    if let Some(hub) = &v.hub {
        s.push_str(&format!("Hub: {hub}\n"));
    }
    if let Some(skew) = v.skew {
        s.push_str(&format!("Skew: {skew}\n"));
    }
    s
}

/// The hub asked and its `GET /api/v1/version` (answered without a token, so
/// this works before `fleetgate login`).
async fn server_version(global: &Global) -> (Option<String>, Result<VersionInfo>) {
    let mut conn = match config::resolve(global) {
        Ok(c) => c,
        Err(e) => return (None, Err(e)),
    };
    conn.token = None;
    let hub = conn.hub.clone();
    let answer = match Client::new(conn) {
        Ok(client) => client.get::<VersionInfo>("/version", &[]).await,
        Err(e) => Err(e),
    };
    let answer = answer.map_err(|e| match e {
        // A hub of 0.1.0 has no version endpoint.
        Error::Api {
            status: 404,
            code,
            field,
            ..
        } => Error::Api {
            status: 404,
            code,
            message: "the hub has no /api/v1/version: it is older than 0.2.0 (or not a \
                      fleetgate hub)"
                .into(),
            field,
        },
        e => e,
    });
    (Some(hub), answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_both_versions_and_the_skew() {
        let v = Versions {
            client_version: VersionInfo {
                version: "0.2.0".into(),
                commit: "abc".into(),
            },
            hub: Some("http://127.0.0.1:8080".into()),
            server_version: Some(VersionInfo {
                version: "0.1.0".into(),
                commit: "def".into(),
            }),
            server_error: None,
            skew: Some(Skew::Supported),
        };
        assert_eq!(
            table(&v),
            "Client Version: 0.2.0 (commit abc)\nServer Version: 0.1.0 (commit def)\n\
             Hub: http://127.0.0.1:8080\nSkew: supported\n"
        );
    }
}
