//! Validation of everything in a gate manifest except the window schedules (compiled in
//! `compile.rs`): apiVersion/kind, names, scope, targets, selectors and zones.

use std::collections::BTreeSet;

use crate::budgets::{GATE_MANIFEST_MAX_BYTES, GATE_MAX_WINDOWS, NAMES_MAX};
use crate::manifest::{API_VERSION, KIND, MAX_REQUEST_WINDOW};
use crate::{FluxKind, Gate, GateSpec, Mode, PolicyError};

/// Checks the non-schedule parts of `gate`; the first error found is returned with its path.
pub(crate) fn validate_structure(gate: &Gate) -> Result<(), PolicyError> {
    if gate.api_version != API_VERSION {
        return Err(PolicyError::new(
            "apiVersion",
            format!("must be '{API_VERSION}', got '{}'", gate.api_version),
        ));
    }
    if gate.kind != KIND {
        return Err(PolicyError::new(
            "kind",
            format!("must be '{KIND}', got '{}'", gate.kind),
        ));
    }
    // The manifest goes to every spoke in scope as JSON: its size is the gate's budget.
    let bytes = serde_json::to_vec(gate).map_or(usize::MAX, |v| v.len());
    if bytes > GATE_MANIFEST_MAX_BYTES {
        return Err(PolicyError::new(
            "",
            format!(
                "the manifest is {bytes} bytes as JSON, over the budget of {GATE_MANIFEST_MAX_BYTES}"
            ),
        ));
    }
    dns_label(&gate.metadata.name).map_err(|e| e.within("metadata.name"))?;
    if gate.metadata.name == crate::FREEZE_GATE {
        return Err(PolicyError::new(
            "metadata.name",
            format!("'{}' is reserved for fleet freezes", crate::FREEZE_GATE),
        ));
    }
    let spec = &gate.spec;
    if let Some(description) = &spec.description
        && description.len() > 1024
    {
        return Err(PolicyError::new(
            "spec.description",
            "longer than 1024 characters",
        ));
    }

    let clusters = &spec.clusters;
    if clusters.names.is_empty() && clusters.selector.is_none() {
        return Err(PolicyError::new(
            "spec.clusters",
            "give cluster names, a selector, or both (selector: {} selects every cluster)",
        ));
    }
    non_empty_unique(&clusters.names, "spec.clusters.names")?;
    if let Some(selector) = &clusters.selector {
        selector
            .validate()
            .map_err(|e| e.within("spec.clusters.selector"))?;
    }

    let targets = &spec.targets;
    let mut seen = BTreeSet::new();
    for (i, kind) in targets.kinds.iter().enumerate() {
        if !seen.insert(*kind) {
            return Err(PolicyError::new(
                format!("spec.targets.kinds[{i}]"),
                format!("duplicate kind '{kind}'"),
            ));
        }
        if spec.mode == Mode::HoldObjects && *kind != FluxKind::Kustomization {
            return Err(PolicyError::new(
                format!("spec.targets.kinds[{i}]"),
                format!(
                    "mode holdObjects holds objects inside Kustomizations only, not '{kind}'{}",
                    if *kind == FluxKind::HelmRelease {
                        " (helm-controller has no per-object hold; use mode suspend or freezeSources for HelmReleases)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        if spec.mode == Mode::FreezeSources
            && !matches!(kind, FluxKind::Kustomization | FluxKind::HelmRelease)
        {
            return Err(PolicyError::new(
                format!("spec.targets.kinds[{i}]"),
                format!(
                    "mode freezeSources targets Kustomizations and HelmReleases (whose sources it freezes), not '{kind}'"
                ),
            ));
        }
    }
    non_empty_unique(&targets.namespaces, "spec.targets.namespaces")?;
    non_empty_unique(&targets.names, "spec.targets.names")?;
    if let Some(selector) = &targets.selector {
        selector
            .validate()
            .map_err(|e| e.within("spec.targets.selector"))?;
    }

    validate_objects(spec)?;

    if let Some(window) = &spec.window {
        let d = crate::parse_duration(window).map_err(|e| e.within("spec.window"))?;
        if d <= chrono::Duration::zero() || d > MAX_REQUEST_WINDOW {
            return Err(PolicyError::new(
                "spec.window",
                format!(
                    "must be more than 0 and at most {}, got '{window}'",
                    crate::format_duration(MAX_REQUEST_WINDOW)
                ),
            ));
        }
    }

    if let Some(rollout) = &spec.rollout {
        rollout.validate().map_err(|e| e.within("spec.rollout"))?;
    }

    if let Some(approval) = &spec.approval {
        approval.validate().map_err(|e| e.within("spec.approval"))?;
    }

    if spec.windows.len() > GATE_MAX_WINDOWS {
        return Err(PolicyError::new(
            "spec.windows",
            format!(
                "{} windows, over the budget of {GATE_MAX_WINDOWS}",
                spec.windows.len()
            ),
        ));
    }
    let mut names = BTreeSet::new();
    for (i, window) in spec.windows.iter().enumerate() {
        let path = format!("spec.windows[{i}].name");
        if window.name.trim().is_empty() {
            return Err(PolicyError::new(path, "must not be empty"));
        }
        if window.name.len() > 63 {
            return Err(PolicyError::new(path, "longer than 63 characters"));
        }
        if !names.insert(window.name.as_str()) {
            return Err(PolicyError::new(
                path,
                format!("duplicate window name '{}'", window.name),
            ));
        }
    }
    Ok(())
}

/// `spec.objects`: required by `holdObjects`, refused by every other mode.
fn validate_objects(spec: &GateSpec) -> Result<(), PolicyError> {
    let objects = match (&spec.objects, spec.mode) {
        (None, Mode::HoldObjects) => {
            return Err(PolicyError::new(
                "spec.objects",
                "required with mode holdObjects: which objects inside the Kustomizations to hold (objects: {} holds all of them)",
            ));
        }
        (Some(_), mode) if mode != Mode::HoldObjects => {
            return Err(PolicyError::new(
                "spec.objects",
                format!("only allowed with mode holdObjects (this gate's mode is {mode})"),
            ));
        }
        (None, _) => return Ok(()),
        (Some(objects), _) => objects,
    };
    let mut seen = BTreeSet::new();
    for (i, gk) in objects.kinds.iter().enumerate() {
        let path = format!("spec.objects.kinds[{i}]");
        if gk.kind.trim().is_empty() {
            return Err(PolicyError::new(
                format!("{path}.kind"),
                "must not be empty",
            ));
        }
        if gk.group.contains('/') {
            return Err(PolicyError::new(
                format!("{path}.group"),
                format!(
                    "'{}' is an apiVersion; give the API group without its version (apps, not apps/v1; empty for the core group)",
                    gk.group
                ),
            ));
        }
        if !seen.insert(gk) {
            return Err(PolicyError::new(path, format!("duplicate kind '{gk}'")));
        }
    }
    non_empty_unique(&objects.namespaces, "spec.objects.namespaces")?;
    non_empty_unique(&objects.names, "spec.objects.names")?;
    if let Some(selector) = &objects.selector {
        selector
            .validate()
            .map_err(|e| e.within("spec.objects.selector"))?;
    }
    Ok(())
}

/// A DNS-1123 label: 1–63 lowercase alphanumerics or `-`, starting and ending alphanumeric.
pub fn dns_label(name: &str) -> Result<(), PolicyError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(PolicyError::new(
            "",
            format!(
                "'{name}' is not a DNS-1123 label (1-63 lowercase letters, digits or '-', starting and ending with a letter or digit)"
            ),
        ))
    }
}

fn non_empty_unique(values: &[String], path: &str) -> Result<(), PolicyError> {
    if values.len() > NAMES_MAX {
        return Err(PolicyError::new(
            path,
            format!("{} entries, over the budget of {NAMES_MAX}", values.len()),
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, v) in values.iter().enumerate() {
        if v.trim().is_empty() {
            return Err(PolicyError::new(
                format!("{path}[{i}]"),
                "must not be empty",
            ));
        }
        if !seen.insert(v) {
            return Err(PolicyError::new(
                format!("{path}[{i}]"),
                format!("duplicate '{v}'"),
            ));
        }
    }
    Ok(())
}
