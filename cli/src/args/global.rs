//! The options every command takes (hub, token, config file, output format, timeout): what
//! the connection, the configuration and the output read, so they import nothing else of the
//! grammar.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Debug, Clone, Args)]
pub struct Global {
    /// Hub base URL (e.g. https://fleetgate.example.com). Default from the
    /// config file, else http://127.0.0.1:8080.
    #[arg(long, env = "FLEETGATE_HUB", global = true)]
    pub hub: Option<String>,
    /// API token (Bearer). Default from the config file.
    #[arg(long, env = "FLEETGATE_TOKEN", global = true, hide_env_values = true)]
    pub token: Option<String>,
    /// Config file (YAML with `hub:` and `token:`). Default
    /// $XDG_CONFIG_HOME/fleetgate/config.yaml or ~/.config/fleetgate/config.yaml.
    #[arg(long, env = "FLEETGATE_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table, global = true)]
    pub output: Format,
    /// Per-request timeout in seconds.
    #[arg(long, default_value_t = 30, global = true)]
    pub timeout: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Yaml,
}
