//! Object-level holds (`mode: holdObjects`): while a gate is closed, chosen
//! objects *inside* a Kustomization carry kustomize-controller's own opt-out
//! (`kustomize.toolkit.fluxcd.io/reconcile: disabled`) with fleetgate's marker
//! beside it; everything else the Kustomization applies stays real-time.
//! `plan` decides (pure), `inventory` says which Kustomization an object
//! belongs to, `enforce` patches, `watch` observes metadata only, `strays`
//! reads inventory-listed objects the watches miss.

pub(crate) mod enforce;
pub(crate) mod inventory;
pub(crate) mod kinds;
pub mod marks;
pub(crate) mod not_permitted;
pub mod observed;
pub mod plan;
pub(crate) mod steps;
pub(crate) mod strays;
pub(crate) mod watch;
