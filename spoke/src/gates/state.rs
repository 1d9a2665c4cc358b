//! What the Gate loop remembers between passes.

use std::collections::{BTreeMap, HashMap};

use super::requests::{Action, Handled};
use super::{local, mirror};

/// What the loop remembers between passes.
#[derive(Default)]
pub(super) struct State {
    /// Standalone: the last valid version of each gate (seeded from the
    /// persisted snapshot, so an invalid spec keeps its last valid version
    /// across a restart).
    pub(super) in_force: local::InForce,
    /// Requests decided, per gate (seeded from the Gate's status).
    pub(super) handled: HashMap<String, BTreeMap<Action, Handled>>,
    /// Mirrored objects as the spoke last wrote them (name → resourceVersion).
    pub(super) mirror: mirror::Written,
}
