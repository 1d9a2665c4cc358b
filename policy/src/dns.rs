//! Kubernetes-style names: a DNS-1123 label.

use crate::error::PolicyError;

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
