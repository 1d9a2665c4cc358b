//! Object-level holds (`mode: holdObjects`): while a gate is closed, chosen
//! objects *inside* a Kustomization carry kustomize-controller's own opt-out
//! (`kustomize.toolkit.fluxcd.io/reconcile: disabled`) with fleetgate's marker
//! beside it; everything else the Kustomization applies stays real-time.
//! `plan` decides (pure), `inventory` says which Kustomization an object
//! belongs to, `enforce` patches, `watch` observes metadata only, `strays`
//! reads inventory-listed objects the watches miss.

pub mod enforce;
pub mod inventory;
pub mod kinds;
pub mod marks;
pub mod not_permitted;
pub mod observed;
pub mod plan;
pub mod steps;
pub mod strays;
pub mod watch;
