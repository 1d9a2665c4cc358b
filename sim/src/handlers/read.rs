//! GET of one object and of collections: label/field selectors, `limit`/`continue`
//! paging (continue tokens carry the list's resourceVersion and the last key, like
//! storage/etcd3's), and `as=Table` responses for kubectl.

use std::sync::Arc;

use axum::Json;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderMap;
use serde_json::{Value, json};

use super::table;
use crate::cluster::Cluster;
use crate::crd::ResourceType;
use crate::error::{Error, Result};
use crate::events;
use crate::query::Params;
use crate::selectors::{FieldSelector, LabelSelector};

pub fn wants_table(headers: &HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .any(|a| a.contains("as=Table"))
}

/// `Accept: application/json;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`: the client
/// (kube's `metadata_watcher`, `kubectl get -o name`) wants metadata only.
pub fn wants_metadata(headers: &HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .any(|a| a.contains("as=PartialObjectMetadata"))
}

/// An object reduced to its metadata, as the API server answers metadata-only requests.
pub fn partial(obj: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]})
}

pub fn get(
    cluster: &Cluster,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
    headers: &HeaderMap,
) -> Result<Response> {
    let (obj, rv) = cluster.store.with(|s| {
        (
            s.get(&rt.key(), ns.unwrap_or_default(), name),
            s.current_rv(),
        )
    });
    let obj = obj.ok_or_else(|| Error::not_found(rt, name))?;
    if wants_table(headers) {
        return Ok(Json(table::render(rt, &[obj], rv, None, false)).into_response());
    }
    if wants_metadata(headers) {
        return Ok(Json(partial(&obj)).into_response());
    }
    Ok(Json(&*obj).into_response())
}

fn decode_continue(token: &str) -> Result<(u64, String, String)> {
    let bad = || {
        Error::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    Ok((
        v["rv"].as_u64().ok_or_else(bad)?,
        v["ns"].as_str().ok_or_else(bad)?.to_string(),
        v["name"].as_str().ok_or_else(bad)?.to_string(),
    ))
}

fn encode_continue(rv: u64, obj: &Value) -> String {
    let m = &obj["metadata"];
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "ns": m["namespace"].as_str().unwrap_or_default(), "name": m["name"]});
    URL_SAFE_NO_PAD.encode(token.to_string())
}

/// Matching objects and the list's resourceVersion, honouring selectors and paging.
pub struct Page {
    pub items: Vec<Arc<Value>>,
    pub rv: u64,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

pub fn select(
    cluster: &Cluster,
    rt: &ResourceType,
    ns: Option<&str>,
    params: &Params,
) -> Result<Page> {
    let labels = LabelSelector::parse(params.get("labelSelector").map_or("", |s| s))?;
    let fields = FieldSelector::parse(params.get("fieldSelector").map_or("", |s| s), rt.custom)?;
    let limit = match params.get("limit").map(|l| l.parse::<usize>()) {
        Some(Ok(0)) | None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(_)) => return Err(Error::bad_request("limit: invalid value")),
    };
    let start = match params.get("continue").filter(|c| !c.is_empty()) {
        Some(c) => Some(decode_continue(c)?),
        None => None,
    };
    let filtered = labels_or_fields(params);
    cluster.store.with(|s| {
        let after = start.as_ref().map(|(_, n, m)| (n.clone(), m.clone()));
        let rv = start.as_ref().map_or(s.current_rv(), |(rv, _, _)| *rv);
        let mut all = s.list(&rt.key(), ns, after.as_ref());
        if let Some(twin) = events::twin_key(rt) {
            all.extend(
                s.list(twin, ns, after.as_ref())
                    .iter()
                    .map(|o| events::convert(rt, o)),
            );
            all.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
        }
        let all: Vec<Arc<Value>> = all
            .into_iter()
            .filter(|o| labels.matches(o) && fields.matches(o))
            .collect();
        let (items, rest) = match limit {
            Some(n) if all.len() > n => (all[..n].to_vec(), all.len() - n),
            _ => (all, 0),
        };
        let continue_token = (rest > 0).then(|| encode_continue(rv, &items[items.len() - 1]));
        Ok(Page {
            items,
            rv,
            continue_token,
            // remainingItemCount is only reported for unfiltered lists (etcd3 store).
            remaining: (rest > 0 && !filtered).then_some(rest),
        })
    })
}

fn sort_key(o: &Value) -> (&str, &str) {
    let m = &o["metadata"];
    (
        m["namespace"].as_str().unwrap_or_default(),
        m["name"].as_str().unwrap_or_default(),
    )
}

fn labels_or_fields(params: &Params) -> bool {
    ["labelSelector", "fieldSelector"]
        .iter()
        .any(|k| params.get(*k).is_some_and(|v| !v.is_empty()))
}

pub fn list(
    cluster: &Cluster,
    rt: &ResourceType,
    ns: Option<&str>,
    params: &Params,
    headers: &HeaderMap,
) -> Result<Response> {
    let page = select(cluster, rt, ns, params)?;
    if wants_table(headers) {
        let include_object = params.get("includeObject").is_some_and(|v| v == "Object");
        let mut t = table::render(
            rt,
            &page.items,
            page.rv,
            page.continue_token.as_deref(),
            include_object,
        );
        if let Some(r) = page.remaining {
            t["metadata"]["remainingItemCount"] = json!(r);
        }
        return Ok(Json(t).into_response());
    }
    let mut meta = json!({"resourceVersion": page.rv.to_string()});
    if let Some(c) = &page.continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(r) = page.remaining {
        meta["remainingItemCount"] = json!(r);
    }
    if wants_metadata(headers) {
        let items: Vec<Value> = page.items.iter().map(|o| partial(o)).collect();
        return Ok(Json(json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadataList",
            "metadata": meta,
            "items": items,
        }))
        .into_response());
    }
    let items: Vec<&Value> = page.items.iter().map(|o| o.as_ref()).collect();
    Ok(Json(json!({
        "apiVersion": rt.api_version(),
        "kind": rt.list_kind,
        "metadata": meta,
        "items": items,
    }))
    .into_response())
}
