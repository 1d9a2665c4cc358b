//! One module per command group; `run` dispatches a parsed command line.

pub mod access_policy;
pub mod admission_webhook;
pub mod approvals;
pub mod audit;
pub mod cluster;
pub mod dry_run;
pub mod freeze;
pub mod gate;
pub mod identity;
pub mod overrides;
pub mod preview;
pub mod rollout;
pub mod status;
pub mod token;
pub mod version;
pub mod webhook;

#[cfg(test)]
mod fixtures;

use clap::CommandFactory;

use crate::args::{Cli, Command, GateCmd};
use crate::client::Client;
use crate::config;
use crate::error::Result;

pub async fn run(cli: Cli) -> Result<()> {
    let format = cli.global.output;
    // Offline commands first: they need no hub, token or config file.
    match &cli.command {
        Command::Completion { shell } => {
            let mut cmd = Cli::command();
            clap_complete::generate(*shell, &mut cmd, "fleetgate", &mut std::io::stdout());
            return Ok(());
        }
        Command::Gate(GateCmd::Validate { files }) => return gate::validate(files, format),
        Command::Demo { args } => return crate::demo::exec(args),
        Command::Version { client } => return version::run(&cli.global, *client, format).await,
        Command::Gate(GateCmd::Preview(args)) if args.file.is_some() => {
            return preview::offline(args, format);
        }
        _ => {}
    }
    let mut conn = config::resolve(&cli.global)?;
    match &cli.command {
        Command::Login => return identity::login(&conn).await,
        Command::Logout => return identity::logout(&conn).await,
        _ => {}
    }
    // Without a token, the sign-in `fleetgate login` stored for this hub.
    if conn.token.is_none() {
        conn.token = crate::login::token_for(&conn.hub, conn.timeout).await?;
    }
    let client = Client::new(conn)?;
    match &cli.command {
        Command::Gate(g) => match g {
            GateCmd::Validate { .. } => Ok(()),
            GateCmd::Preview(args) => preview::from_hub(&client, args, format).await,
            GateCmd::Apply {
                files,
                prune,
                dry_run: true,
                ..
            } => dry_run::apply(&client, files, *prune, format).await,
            GateCmd::Apply {
                files,
                reason,
                prune,
                dry_run: false,
            } => gate::apply(&client, files, reason, *prune, format).await,
            GateCmd::Diff { files, exit_code } => {
                gate::diff(&client, files, *exit_code, format).await
            }
            GateCmd::List => gate::list(&client, format).await,
            GateCmd::Get { name } => gate::get(&client, name, format).await,
            GateCmd::Delete { name, reason } => gate::delete(&client, name, reason, format).await,
            GateCmd::Open(a) => overrides::set(&client, a, true, format).await,
            GateCmd::Close(a) => overrides::set(&client, a, false, format).await,
            GateCmd::Cancel {
                gate,
                id,
                all,
                reason,
            } => overrides::cancel(&client, gate, id.as_deref(), *all, reason, format).await,
            GateCmd::Overrides { gate, all } => overrides::list(&client, gate, *all, format).await,
        },
        Command::Cluster(c) => cluster::run(&client, c, format).await,
        Command::Rollout(r) => rollout::run(&client, r, format).await,
        Command::Override(o) => approvals::run(&client, o, format).await,
        Command::Token(t) => token::run(&client, t, format).await,
        Command::AccessPolicy(p) => access_policy::run(&client, p, format).await,
        Command::Webhook(w) => webhook::run(&client, w, format).await,
        Command::AdmissionWebhook(w) => admission_webhook::run(&client, w, format).await,
        Command::Status(s) => status::run(&client, s, format).await,
        Command::Audit(a) => audit::run(&client, a, format).await,
        Command::Whoami => identity::whoami(&client, format).await,
        Command::Session(c) => identity::session(&client, c, format).await,
        Command::Freeze(a) => freeze::freeze(&client, a, format).await,
        Command::Unfreeze { reason, id } => {
            freeze::unfreeze(&client, reason, id.as_deref(), format).await
        }
        Command::Freezes { all } => freeze::list(&client, *all, format).await,
        Command::Completion { .. }
        | Command::Demo { .. }
        | Command::Version { .. }
        | Command::Login
        | Command::Logout => Ok(()),
    }
}
