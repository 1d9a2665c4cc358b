//! JSON merge patch (RFC 7386) and JSON patch (RFC 6902) on stored objects, retried on
//! write conflicts like the apiserver's patcher (handlers/patch.go) unless the patch itself
//! pins a resourceVersion.

use serde_json::Value;

use crate::cluster::Cluster;
use crate::crd::ResourceType;
use crate::error::{Error, Result};
use crate::ops::{self, Outcome, Sub, Track, WriteOpts};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Merge,
    Json,
}

/// 415 for a patch type the resource does not accept (negotiation.NewUnsupportedMediaTypeError).
pub fn unsupported_media_type(rt: &ResourceType) -> Error {
    let mut accepted = vec![
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    if !rt.custom {
        accepted.push("application/strategic-merge-patch+json");
    }
    accepted.push("application/apply-patch+yaml");
    Error::api(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        ),
        None,
    )
}

/// Applies a patch document to `doc`.
pub fn apply_patch(doc: &Value, kind: Kind, body: &[u8]) -> Result<Value> {
    let mut out = doc.clone();
    match kind {
        Kind::Merge => {
            let p: Value = serde_json::from_slice(body)
                .map_err(|e| Error::bad_request(format!("error decoding patch: {e}")))?;
            if !p.is_object() {
                return Err(Error::bad_request("merge patch must be a JSON object"));
            }
            json_patch::merge(&mut out, &p);
        }
        Kind::Json => {
            let p: json_patch::Patch =
                serde_json::from_slice(body).map_err(|e| Error::bad_request(e.to_string()))?;
            json_patch::patch(&mut out, &p)
                .map_err(|e| Error::api(422, "Invalid", e.to_string(), None))?;
        }
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
pub fn patch(
    cluster: &Cluster,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    sub: Sub,
    kind: Kind,
    body: &[u8],
    opts: &WriteOpts,
) -> Result<Outcome> {
    let key = rt.key();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let old = cluster
            .store
            .with(|s| s.get(&key, ns, name))
            .ok_or_else(|| Error::not_found(rt, name))?;
        let patched = apply_patch(&old, kind, body)?;
        let pinned = patched["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"];
        match ops::update(
            cluster,
            rt,
            ns,
            name,
            patched,
            sub,
            opts,
            Track::Update,
            Some(&old),
        ) {
            Err(Error::Api(s)) if s.reason == "Conflict" && !pinned && attempts < 5 => continue,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_and_json_patches() {
        let doc = json!({"spec": {"suspend": false, "interval": "5m"}});
        let m = apply_patch(
            &doc,
            Kind::Merge,
            br#"{"spec":{"suspend":true,"interval":null}}"#,
        )
        .unwrap();
        assert_eq!(m, json!({"spec": {"suspend": true}}));
        let j = apply_patch(
            &doc,
            Kind::Json,
            br#"[{"op":"replace","path":"/spec/suspend","value":true}]"#,
        )
        .unwrap();
        assert_eq!(j["spec"]["suspend"], true);
        let e = apply_patch(
            &doc,
            Kind::Json,
            br#"[{"op":"replace","path":"/spec/nope/x","value":1}]"#,
        );
        assert_eq!(e.unwrap_err().status().code, 422);
    }
}
