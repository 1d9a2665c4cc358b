//! The crate's one error type: a message tied to the manifest field it is about.
//! Paths use the manifest's own spelling (`spec.windows[2].schedule`) so people can find the field.

/// An invalid manifest, field or value. `path` is empty when the error is about the whole input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}{}", .path, if .path.is_empty() { "" } else { ": " }, .message)]
pub struct PolicyError {
    /// Field path such as `spec.windows[2].schedule`; empty for the document itself.
    pub path: String,
    /// What is wrong, for people.
    pub message: String,
}

impl PolicyError {
    /// An error about the field at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        PolicyError {
            path: path.into(),
            message: message.into(),
        }
    }

    /// The same error seen from an enclosing field: `within("spec.windows[2]")` turns
    /// `schedule` into `spec.windows[2].schedule`.
    #[must_use]
    pub fn within(mut self, prefix: &str) -> Self {
        self.path = join_path(prefix, &self.path);
        self
    }
}

/// Joins two path fragments with `.` unless the second is empty or an index (`[3]`).
pub(crate) fn join_path(prefix: &str, rest: &str) -> String {
    if prefix.is_empty() {
        rest.to_string()
    } else if rest.is_empty() {
        prefix.to_string()
    } else if rest.starts_with('[') {
        format!("{prefix}{rest}")
    } else {
        format!("{prefix}.{rest}")
    }
}
