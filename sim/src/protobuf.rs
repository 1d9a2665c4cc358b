//! Decoding of Kubernetes protobuf request bodies for the built-in kinds kubectl's
//! generators send that way (`kubectl create namespace|configmap|secret|serviceaccount|
//! role|rolebinding|clusterrole|clusterrolebinding`, `kubectl auth can-i`, `kubectl create token`). Format: the `k8s\0` magic, then a
//! `runtime.Unknown{typeMeta, raw}` whose `raw` is the object message
//! (k8s.io/apimachinery/pkg/runtime/serializer/protobuf, k8s.io/api/*/generated.proto).

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};

const MAGIC: &[u8] = b"k8s\0";

#[derive(Clone, Copy)]
enum T {
    Str,
    Bool,
    Int,
    Time,
    Msg(&'static [F]),
    RepStr,
    RepMsg(&'static [F]),
    MapStr,
    MapBytes,
}

type F = (u64, &'static str, T);

const TYPE_META: &[F] = &[(1, "apiVersion", T::Str), (2, "kind", T::Str)];
const OWNER_REF: &[F] = &[
    (1, "kind", T::Str),
    (3, "name", T::Str),
    (4, "uid", T::Str),
    (5, "apiVersion", T::Str),
    (6, "controller", T::Bool),
    (7, "blockOwnerDeletion", T::Bool),
];
const OBJECT_META: &[F] = &[
    (1, "name", T::Str),
    (2, "generateName", T::Str),
    (3, "namespace", T::Str),
    (5, "uid", T::Str),
    (6, "resourceVersion", T::Str),
    (7, "generation", T::Int),
    (8, "creationTimestamp", T::Time),
    (11, "labels", T::MapStr),
    (12, "annotations", T::MapStr),
    (13, "ownerReferences", T::RepMsg(OWNER_REF)),
    (14, "finalizers", T::RepStr),
];
const CONFIG_MAP: &[F] = &[
    (1, "metadata", T::Msg(OBJECT_META)),
    (2, "data", T::MapStr),
    (3, "binaryData", T::MapBytes),
    (4, "immutable", T::Bool),
];
const SECRET: &[F] = &[
    (1, "metadata", T::Msg(OBJECT_META)),
    (2, "data", T::MapBytes),
    (3, "type", T::Str),
    (4, "stringData", T::MapStr),
    (5, "immutable", T::Bool),
];
const NAMESPACE: &[F] = &[
    (1, "metadata", T::Msg(OBJECT_META)),
    (2, "spec", T::Msg(&[(1, "finalizers", T::RepStr)])),
];
const LOCAL_REF: &[F] = &[(1, "name", T::Str)];
const SERVICE_ACCOUNT: &[F] = &[
    (1, "metadata", T::Msg(OBJECT_META)),
    (3, "imagePullSecrets", T::RepMsg(LOCAL_REF)),
    (4, "automountServiceAccountToken", T::Bool),
];
const POLICY_RULE: &[F] = &[
    (1, "verbs", T::RepStr),
    (2, "apiGroups", T::RepStr),
    (3, "resources", T::RepStr),
    (4, "resourceNames", T::RepStr),
    (5, "nonResourceURLs", T::RepStr),
];
const ROLE: &[F] = &[
    (1, "metadata", T::Msg(OBJECT_META)),
    (2, "rules", T::RepMsg(POLICY_RULE)),
];
const SUBJECT: &[F] = &[
    (1, "kind", T::Str),
    (2, "apiGroup", T::Str),
    (3, "name", T::Str),
    (4, "namespace", T::Str),
];
const ROLE_REF: &[F] = &[
    (1, "apiGroup", T::Str),
    (2, "kind", T::Str),
    (3, "name", T::Str),
];
const BINDING: &[F] = &[
    (1, "metadata", T::Msg(OBJECT_META)),
    (2, "subjects", T::RepMsg(SUBJECT)),
    (3, "roleRef", T::Msg(ROLE_REF)),
];

const RESOURCE_ATTRIBUTES: &[F] = &[
    (1, "namespace", T::Str),
    (2, "verb", T::Str),
    (3, "group", T::Str),
    (4, "version", T::Str),
    (5, "resource", T::Str),
    (6, "subresource", T::Str),
    (7, "name", T::Str),
];
const ACCESS_REVIEW: &[F] = &[
    (1, "metadata", T::Msg(OBJECT_META)),
    (
        2,
        "spec",
        T::Msg(&[(1, "resourceAttributes", T::Msg(RESOURCE_ATTRIBUTES))]),
    ),
];

/// authentication/v1 generated.proto: TokenRequest{metadata=1, spec=2}, its spec
/// {audiences=1, boundObjectRef=3, expirationSeconds=4} (`kubectl create token`).
const BOUND_OBJECT_REF: &[F] = &[
    (1, "kind", T::Str),
    (2, "apiVersion", T::Str),
    (3, "name", T::Str),
    (4, "uid", T::Str),
];
const TOKEN_REQUEST: &[F] = &[
    (1, "metadata", T::Msg(OBJECT_META)),
    (
        2,
        "spec",
        T::Msg(&[
            (1, "audiences", T::RepStr),
            (3, "boundObjectRef", T::Msg(BOUND_OBJECT_REF)),
            (4, "expirationSeconds", T::Int),
        ]),
    ),
];

fn schema_for(kind: &str) -> Option<&'static [F]> {
    Some(match kind {
        "ConfigMap" => CONFIG_MAP,
        "Secret" => SECRET,
        "Namespace" => NAMESPACE,
        "ServiceAccount" => SERVICE_ACCOUNT,
        "Role" | "ClusterRole" => ROLE,
        "RoleBinding" | "ClusterRoleBinding" => BINDING,
        "SelfSubjectAccessReview" => ACCESS_REVIEW,
        "TokenRequest" => TOKEN_REQUEST,
        _ => return None,
    })
}

fn bad(what: &str) -> Error {
    Error::bad_request(format!("unable to decode protobuf body: {what}"))
}

/// Protobuf wire-format reader over one message.
struct Reader<'a> {
    buf: &'a [u8],
}

enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Other,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64> {
        let mut out = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self
                .buf
                .split_first()
                .ok_or_else(|| bad("truncated varint"))?;
            self.buf = rest;
            out |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(out);
            }
        }
        Err(bad("varint too long"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() < n {
            return Err(bad("truncated field"));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn field(&mut self) -> Result<Option<(u64, Wire<'a>)>> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let wire = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| bad("length"))?;
                Wire::Bytes(self.take(n)?)
            }
            1 => {
                self.take(8)?;
                Wire::Other
            }
            5 => {
                self.take(4)?;
                Wire::Other
            }
            _ => return Err(bad("unsupported wire type")),
        };
        Ok(Some((key >> 3, wire)))
    }
}

fn text(b: &[u8]) -> Result<String> {
    String::from_utf8(b.to_vec()).map_err(|_| bad("invalid UTF-8"))
}

fn map_entry(b: &[u8], bytes_value: bool) -> Result<(String, Value)> {
    let mut r = Reader { buf: b };
    let (mut k, mut v) = (String::new(), Value::String(String::new()));
    while let Some((n, w)) = r.field()? {
        if let Wire::Bytes(b) = w {
            match n {
                1 => k = text(b)?,
                2 if bytes_value => v = json!(base64::engine::general_purpose::STANDARD.encode(b)),
                2 => v = json!(text(b)?),
                _ => {}
            }
        }
    }
    Ok((k, v))
}

fn time(b: &[u8]) -> Result<Value> {
    let mut r = Reader { buf: b };
    let mut secs = 0i64;
    while let Some((n, w)) = r.field()? {
        if let (1, Wire::Varint(v)) = (n, w) {
            secs = v as i64;
        }
    }
    Ok(
        chrono::DateTime::from_timestamp(secs, 0).map_or(Value::Null, |t| {
            json!(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        }),
    )
}

fn message(b: &[u8], schema: &[F]) -> Result<Value> {
    let mut out = Map::new();
    let mut r = Reader { buf: b };
    while let Some((n, w)) = r.field()? {
        let Some((_, name, t)) = schema.iter().find(|(no, _, _)| *no == n) else {
            continue;
        };
        let name = name.to_string();
        match (t, w) {
            // Go's JSON omits empty optional strings (`omitempty`); so does this.
            (T::Str, Wire::Bytes([])) => {}
            (T::Str, Wire::Bytes(b)) => {
                out.insert(name, json!(text(b)?));
            }
            (T::Bool, Wire::Varint(v)) => {
                out.insert(name, json!(v != 0));
            }
            (T::Int, Wire::Varint(v)) => {
                out.insert(name, json!(v as i64));
            }
            (T::Time, Wire::Bytes(b)) => {
                out.insert(name, time(b)?);
            }
            (T::Msg(s), Wire::Bytes(b)) => {
                out.insert(name, message(b, s)?);
            }
            (T::RepStr, Wire::Bytes(b)) => push(&mut out, name, json!(text(b)?)),
            (T::RepMsg(s), Wire::Bytes(b)) => push(&mut out, name, message(b, s)?),
            (T::MapStr | T::MapBytes, Wire::Bytes(b)) => {
                let (k, v) = map_entry(b, matches!(t, T::MapBytes))?;
                let entry = out.entry(name).or_insert_with(|| json!({}));
                entry[k] = v;
            }
            _ => return Err(bad("field of unexpected wire type")),
        }
    }
    Ok(Value::Object(out))
}

fn push(out: &mut Map<String, Value>, name: String, v: Value) {
    if let Value::Array(a) = out.entry(name).or_insert_with(|| json!([])) {
        a.push(v);
    }
}

/// Decodes a `k8s\0`-framed protobuf object of a supported built-in kind into JSON.
pub fn decode(body: &[u8]) -> Result<Value> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| bad("missing k8s magic"))?;
    let mut r = Reader { buf: rest };
    let (mut type_meta, mut raw) = (json!({}), &[][..]);
    while let Some((n, w)) = r.field()? {
        match (n, w) {
            (1, Wire::Bytes(b)) => type_meta = message(b, TYPE_META)?,
            (2, Wire::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    let kind = type_meta["kind"].as_str().unwrap_or_default().to_string();
    let schema =
        schema_for(&kind).ok_or_else(|| bad(&format!("kind {kind:?} is not supported")))?;
    let mut obj = message(raw, schema)?;
    obj["apiVersion"] = type_meta["apiVersion"].clone();
    obj["kind"] = json!(kind);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u64, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![((n << 3) | 2) as u8, payload.len() as u8];
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn decodes_a_configmap() {
        let meta = [
            field(1, b"x"),
            field(11, &[field(1, b"app"), field(2, b"web")].concat()),
        ]
        .concat();
        let cm = [
            field(1, &meta),
            field(2, &[field(1, b"a"), field(2, b"b")].concat()),
        ]
        .concat();
        let tm = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
        let body = [MAGIC.to_vec(), field(1, &tm), field(2, &cm)].concat();
        let obj = decode(&body).unwrap();
        assert_eq!(
            obj,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "x", "labels": {"app": "web"}}, "data": {"a": "b"}})
        );
        assert!(decode(b"nope").is_err());
    }
}
