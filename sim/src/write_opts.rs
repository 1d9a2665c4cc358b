//! What one write asks for: the main resource or `/status`, field validation, dry run, the
//! field manager and how managedFields are kept; and the fields a write may touch.

use crate::crd::ResourceType;
use crate::fields::Scope;
use crate::managed;

/// `fieldValidation` query parameter (default Warn since Kubernetes 1.27).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    Ignore,
    #[default]
    Warn,
    Strict,
}

/// Per-request write options.
#[derive(Debug, Clone, Default)]
pub struct WriteOpts {
    pub manager: String,
    pub validation: FieldValidation,
    pub dry_run: bool,
}

/// Main resource or the `/status` subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sub {
    Main,
    Status,
}

/// How managedFields are maintained for a write.
pub enum Track<'a> {
    /// An Update operation by `WriteOpts::manager`.
    Update,
    /// The caller (server-side apply) already computed them.
    Precomputed(&'a [managed::Entry]),
}

pub fn scope_of(rt: &ResourceType, sub: Sub) -> Scope {
    match (sub, rt.status_subresource) {
        (Sub::Status, _) => Scope::Status,
        (Sub::Main, true) => Scope::NoStatus,
        (Sub::Main, false) => Scope::All,
    }
}
