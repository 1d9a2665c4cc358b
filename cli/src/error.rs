//! The CLI's one error type and the exit codes scripts can rely on.
//! Every failure maps to exactly one documented code (see docs/cli.md).

use std::process::ExitCode;

/// Exit codes (documented in docs/cli.md "Exit codes"). 2 is also what clap
/// uses for usage errors, so it is reserved for those.
pub mod code {
    pub const OK: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const NOT_FOUND: u8 = 3;
    pub const CONFLICT: u8 = 4;
    pub const AUTH: u8 = 5;
    pub const INVALID: u8 = 6;
    pub const UNREACHABLE: u8 = 7;
    pub const DIFFERENT: u8 = 8;
    pub const PROVIDER_UNREACHABLE: u8 = 9;
    pub const NOT_DELIVERED: u8 = 10;
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A manifest or a flag value is invalid; `path` names the field.
    #[error("{source_name}: {message}")]
    Invalid {
        source_name: String,
        message: String,
    },
    /// Wrong flag combination or value the parser could not catch.
    #[error("{0}")]
    Usage(String),
    /// The hub answered with an error status.
    #[error("{message}")]
    Api {
        status: u16,
        code: String,
        message: String,
        field: Option<String>,
    },
    /// The hub could not be reached at all.
    #[error("cannot reach the hub at {hub}: {message}")]
    Unreachable { hub: String, message: String },
    /// The hub's identity provider could not be reached, or answered with a server error
    /// (`login`, and refreshing a stored sign-in): the hub itself may be up.
    #[error("cannot reach the identity provider{} at {url}: {message}", named(.provider))]
    ProviderUnreachable {
        provider: String,
        url: String,
        message: String,
    },
    /// Reading a local file failed.
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// `webhook test`: the hub sent the test delivery and the receiver did not take it (the
    /// answer was printed).
    #[error("the test delivery to webhook {0} failed")]
    NotDelivered(String),
    /// `gate diff --exit-code` found differences (not an error message).
    #[error("differences found")]
    Different,
    #[error("{0}")]
    Other(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// ` <name>` where the provider has a display name.
fn named(provider: &str) -> String {
    if provider.is_empty() {
        String::new()
    } else {
        format!(" {provider}")
    }
}

impl Error {
    pub fn invalid(source_name: impl Into<String>, message: impl std::fmt::Display) -> Self {
        Error::Invalid {
            source_name: source_name.into(),
            message: message.to_string(),
        }
    }

    pub fn io(path: impl std::fmt::Display, err: impl std::fmt::Display) -> Self {
        Error::Io {
            path: path.to_string(),
            message: err.to_string(),
        }
    }

    /// The exit code this error ends the process with.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Invalid { .. } => code::INVALID,
            Error::Usage(_) => code::USAGE,
            Error::Api { status, .. } => match *status {
                401 | 403 => code::AUTH,
                404 => code::NOT_FOUND,
                409 | 412 => code::CONFLICT,
                400 | 413 | 422 => code::INVALID,
                _ => code::ERROR,
            },
            Error::Unreachable { .. } => code::UNREACHABLE,
            Error::ProviderUnreachable { .. } => code::PROVIDER_UNREACHABLE,
            Error::Io { .. } | Error::Other(_) => code::ERROR,
            Error::Different => code::DIFFERENT,
            Error::NotDelivered(_) => code::NOT_DELIVERED,
        }
    }

    /// The message printed on stderr (after `error: `), with the field path
    /// and a hint where one helps.
    pub fn render(&self) -> String {
        match self {
            Error::Api {
                status,
                code,
                message,
                field,
            } => {
                let mut s = match field {
                    Some(f) if !f.is_empty() && !message.starts_with(f.as_str()) => {
                        format!("{f}: {message}")
                    }
                    _ => message.clone(),
                };
                s.push_str(&format!(" (HTTP {status} {code})"));
                match status {
                    401 => s.push_str(
                        "\nhint: pass a token with --token, FLEETGATE_TOKEN or the config file",
                    ),
                    403 => s.push_str("\nhint: this needs a token with a higher role"),
                    _ => {}
                }
                s
            }
            other => other.to_string(),
        }
    }

    pub fn to_exit_code(&self) -> ExitCode {
        ExitCode::from(self.exit_code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16) -> Error {
        Error::Api {
            status,
            code: "x".into(),
            message: "m".into(),
            field: Some("spec.windows[0].schedule".into()),
        }
    }

    #[test]
    fn http_statuses_map_to_documented_exit_codes() {
        for (status, want) in [
            (400, code::INVALID),
            (401, code::AUTH),
            (403, code::AUTH),
            (404, code::NOT_FOUND),
            (409, code::CONFLICT),
            (412, code::CONFLICT),
            (413, code::INVALID),
            (422, code::INVALID),
            (500, code::ERROR),
            (503, code::ERROR),
        ] {
            assert_eq!(api(status).exit_code(), want, "HTTP {status}");
        }
        assert_eq!(Error::Usage("u".into()).exit_code(), code::USAGE);
        assert_eq!(Error::invalid("f", "m").exit_code(), code::INVALID);
        assert_eq!(Error::Different.exit_code(), code::DIFFERENT);
        assert_eq!(
            Error::NotDelivered("w".into()).exit_code(),
            code::NOT_DELIVERED
        );
        let unreachable = Error::Unreachable {
            hub: "h".into(),
            message: "m".into(),
        };
        assert_eq!(unreachable.exit_code(), code::UNREACHABLE);
        let provider = Error::ProviderUnreachable {
            provider: "Dex".into(),
            url: "u".into(),
            message: "m".into(),
        };
        assert_eq!(provider.exit_code(), code::PROVIDER_UNREACHABLE);
    }

    #[test]
    fn api_errors_name_the_field_and_hint_on_auth() {
        assert_eq!(
            api(422).render(),
            "spec.windows[0].schedule: m (HTTP 422 x)"
        );
        assert!(api(401).render().contains("hint: pass a token"));
        assert!(api(403).render().contains("higher role"));
    }
}
