//! Where the hub URL and the token come from: flag › environment › config
//! file › default. The config file is optional YAML (`hub:`, `token:`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::args::Global;
use crate::error::{Error, Result};

pub const DEFAULT_HUB: &str = "http://127.0.0.1:8080";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    hub: Option<String>,
    token: Option<String>,
}

/// The resolved connection settings.
#[derive(Debug, Clone)]
pub struct Connection {
    pub hub: String,
    pub token: Option<String>,
    pub timeout: std::time::Duration,
}

/// Resolves hub and token. Flags and environment variables are already merged
/// by clap; the config file only fills what they left empty.
pub fn resolve(global: &Global) -> Result<Connection> {
    let (path, explicit) = match &global.config {
        Some(p) => (Some(p.clone()), true),
        None => (default_path(), false),
    };
    let file = match path {
        Some(p) => read_file(&p, explicit)?,
        None => FileConfig::default(),
    };
    let hub = global
        .hub
        .clone()
        .or(file.hub)
        .unwrap_or_else(|| DEFAULT_HUB.to_string());
    let hub = hub.trim_end_matches('/').to_string();
    if !(hub.starts_with("http://") || hub.starts_with("https://")) {
        return Err(Error::Usage(format!(
            "--hub must be an http:// or https:// URL, got '{hub}'"
        )));
    }
    let token = global
        .token
        .clone()
        .or(file.token)
        .filter(|t| !t.is_empty());
    Ok(Connection {
        hub,
        token,
        timeout: std::time::Duration::from_secs(global.timeout.max(1)),
    })
}

fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("fleetgate").join("config.yaml"))
}

/// A missing default file is fine; a missing explicit one is an error.
fn read_file(path: &Path, explicit: bool) -> Result<FileConfig> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            return Ok(FileConfig::default());
        }
        Err(e) => return Err(Error::io(path.display(), e)),
    };
    if text.trim().is_empty() {
        return Ok(FileConfig::default());
    }
    fleetgate_policy::yaml::from_str(&text)
        .map_err(|e| Error::invalid(path.display().to_string(), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Format;

    fn global(config: Option<PathBuf>, hub: Option<&str>, token: Option<&str>) -> Global {
        Global {
            hub: hub.map(String::from),
            token: token.map(String::from),
            config,
            output: Format::Table,
            timeout: 30,
        }
    }

    #[test]
    fn file_fills_what_flags_leave_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "hub: https://hub.example/\ntoken: fga_abc\n").unwrap();
        let c = resolve(&global(Some(path.clone()), None, None)).unwrap();
        assert_eq!(c.hub, "https://hub.example");
        assert_eq!(c.token.as_deref(), Some("fga_abc"));
        let c = resolve(&global(Some(path), Some("http://other:1"), Some("fga_x"))).unwrap();
        assert_eq!(c.hub, "http://other:1");
        assert_eq!(c.token.as_deref(), Some("fga_x"));
    }

    #[test]
    fn explicit_missing_file_and_unknown_keys_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.yaml");
        assert!(resolve(&global(Some(missing), None, None)).is_err());
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "hubb: x\n").unwrap();
        let err = resolve(&global(Some(bad), None, None)).unwrap_err();
        assert!(err.to_string().contains("hubb"), "{err}");
    }

    #[test]
    fn hub_must_be_a_url() {
        let err = resolve(&global(None, Some("localhost:8080"), None)).unwrap_err();
        assert_eq!(err.exit_code(), crate::error::code::USAGE);
    }
}
