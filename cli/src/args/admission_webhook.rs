//! `fleetgate admission-webhook`: the grammar of the admission webhook commands.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum AdmissionWebhookCmd {
    /// Create or replace an admission webhook (audited).
    #[command(visible_alias = "create")]
    Apply {
        /// Its name (a DNS label).
        name: String,
        /// Where the hub POSTs (https unless the hub allows plain http).
        #[arg(long)]
        url: String,
        /// What it is asked about: override (default) and/or approval; repeatable.
        #[arg(long = "operation", value_parser = ["override", "approval"])]
        operations: Vec<String>,
        /// How long the hub waits for the webhook's answer (Go-style, at most 30s;
        /// default 5s). Not the global --timeout, which is this command's own.
        #[arg(long, value_name = "DURATION")]
        call_timeout: Option<String>,
        /// What a timeout, 5xx or malformed answer means: Fail (deny) or Ignore (allow).
        #[arg(long, default_value = "Fail", value_parser = ["Fail", "Ignore"])]
        failure_policy: String,
        /// A PEM file of CA certificates trusted for this webhook.
        #[arg(long, value_name = "FILE")]
        ca_bundle: Option<std::path::PathBuf>,
    },
    /// Every admission webhook.
    List,
    /// One admission webhook.
    Get { name: String },
    /// Delete an admission webhook (audited).
    Delete { name: String },
}
