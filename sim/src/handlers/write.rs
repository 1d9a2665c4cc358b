//! HTTP glue for create (POST), update (PUT), patch (PATCH) and delete: request options
//! (`fieldManager`, `fieldValidation`, `dryRun`), content types, status codes and
//! `Warning` headers.

use axum::Json;
use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{Value, json};

use super::read;
use crate::apply;
use crate::cluster::Cluster;
use crate::crd::ResourceType;
use crate::error::{Error, Result};
use crate::ops::{self, FieldValidation, Outcome, Sub, Track, WriteOpts};
use crate::patch;
use crate::query::Params;

pub struct Ctx<'a> {
    pub cluster: &'a Cluster,
    pub params: &'a Params,
    pub headers: &'a HeaderMap,
}

impl Ctx<'_> {
    fn opts(&self) -> Result<WriteOpts> {
        let validation = match self.params.get("fieldValidation").map(String::as_str) {
            None | Some("") | Some("Warn") => FieldValidation::Warn,
            Some("Strict") => FieldValidation::Strict,
            Some("Ignore") => FieldValidation::Ignore,
            Some(other) => {
                return Err(Error::bad_request(format!(
                    "fieldValidation must be one of Ignore, Warn or Strict, got {other}"
                )));
            }
        };
        // Without fieldManager the manager is the User-Agent up to the first '/'
        // (apiserver handlers/rest.go prefixFromUserAgent).
        let manager = match self.params.get("fieldManager").filter(|m| !m.is_empty()) {
            Some(m) => m.clone(),
            None => self
                .headers
                .get(http::header::USER_AGENT)
                .and_then(|u| u.to_str().ok())
                .and_then(|u| u.split('/').next())
                .filter(|u| !u.is_empty())
                .unwrap_or("unknown")
                .to_string(),
        };
        Ok(WriteOpts {
            manager,
            validation,
            dry_run: self.params.get("dryRun").is_some_and(|d| d == "All"),
        })
    }

    fn content_type(&self) -> String {
        self.headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|c| c.to_str().ok())
            .and_then(|c| c.split(';').next())
            .unwrap_or("application/json")
            .trim()
            .to_string()
    }
}

/// Decodes a create/update body: JSON, YAML, or (built-in kinds only, as kubectl's typed
/// generators such as `kubectl create configmap` send it) Kubernetes protobuf.
fn decode_body(ctx: &Ctx<'_>, rt: &ResourceType, body: &Bytes) -> Result<Value> {
    match ctx.content_type().as_str() {
        "application/json" | "" | "*/*" => parse_body(body, false),
        "application/yaml" => parse_body(body, true),
        "application/vnd.kubernetes.protobuf" if !rt.custom => crate::protobuf::decode(body),
        _ => Err(Error::api(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: \
                 application/json, application/yaml{}",
                if rt.custom {
                    ""
                } else {
                    ", application/vnd.kubernetes.protobuf"
                }
            ),
            None,
        )),
    }
}

fn parse_body(body: &Bytes, yaml: bool) -> Result<Value> {
    if yaml {
        fleetgate_policy::yaml::from_slice(body)
            .map_err(|e| Error::bad_request(format!("error decoding YAML: {e}")))
    } else {
        serde_json::from_slice(body)
            .map_err(|e| Error::bad_request(format!("error decoding JSON: {e}")))
    }
}

fn respond(code: StatusCode, out: Outcome) -> Response {
    let mut resp = (code, Json(&*out.object)).into_response();
    for w in out.warnings {
        let v = format!("299 - {}", serde_json::Value::String(w));
        if let Ok(h) = HeaderValue::from_str(&v) {
            resp.headers_mut().append(http::header::WARNING, h);
        }
    }
    resp
}

pub fn create(
    ctx: &Ctx<'_>,
    rt: &ResourceType,
    ns: Option<&str>,
    body: &Bytes,
) -> Result<Response> {
    let obj = decode_body(ctx, rt, body)?;
    let out = ops::create(ctx.cluster, rt, ns, obj, &ctx.opts()?, Track::Update)?;
    Ok(respond(StatusCode::CREATED, out))
}

pub fn update(
    ctx: &Ctx<'_>,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
    status: bool,
    body: &Bytes,
) -> Result<Response> {
    let obj = decode_body(ctx, rt, body)?;
    let sub = if status { Sub::Status } else { Sub::Main };
    let ns = ns.unwrap_or_default();
    let out = ops::update(
        ctx.cluster,
        rt,
        ns,
        name,
        obj,
        sub,
        &ctx.opts()?,
        Track::Update,
        None,
    )?;
    Ok(respond(StatusCode::OK, out))
}

pub fn patch(
    ctx: &Ctx<'_>,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
    status: bool,
    body: &Bytes,
) -> Result<Response> {
    let ct = ctx.content_type();
    let sub = if status { Sub::Status } else { Sub::Main };
    let opts = ctx.opts()?;
    let force = ctx.params.get("force").is_some_and(|f| f == "true");
    let kind = match ct.as_str() {
        "application/apply-patch+yaml" => {
            apply::require_manager(ctx.params.get("fieldManager"))?;
            let (out, created) = apply::apply(ctx.cluster, rt, ns, name, sub, body, &opts, force)?;
            let code = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            return Ok(respond(code, out));
        }
        _ if force => {
            return Err(Error::bad_request(
                "force may not be specified for non-apply patch",
            ));
        }
        "application/merge-patch+json" => patch::Kind::Merge,
        "application/json-patch+json" => patch::Kind::Json,
        // Built-in kinds accept strategic merge; for their simple shapes here it is a
        // merge patch. Custom resources do not (no Go struct tags): 415 below.
        "application/strategic-merge-patch+json" if !rt.custom => patch::Kind::Merge,
        _ => return Err(patch::unsupported_media_type(rt)),
    };
    let out = patch::patch(
        ctx.cluster,
        rt,
        ns.unwrap_or_default(),
        name,
        sub,
        kind,
        body,
        &opts,
    )?;
    Ok(respond(StatusCode::OK, out))
}

pub fn delete(
    ctx: &Ctx<'_>,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
    body: &Bytes,
) -> Result<Response> {
    let opts: Value = if body.is_empty() {
        json!({})
    } else {
        parse_body(body, false)?
    };
    let precondition = opts["preconditions"]["resourceVersion"].as_str();
    let dry_run = ctx.params.get("dryRun").is_some_and(|d| d == "All")
        || opts["dryRun"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x == "All"));
    let obj = ops::delete(
        ctx.cluster,
        rt,
        ns.unwrap_or_default(),
        name,
        precondition,
        dry_run,
    )?;
    let pending = obj["metadata"].get("deletionTimestamp").is_some()
        && obj["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
    let code = if pending {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    if rt.custom || pending {
        return Ok((code, Json(&*obj)).into_response());
    }
    // Built-in registries answer with a Success Status (ReturnDeletedObject=false).
    let mut details = json!({"name": name, "kind": rt.plural, "uid": obj["metadata"]["uid"]});
    if !rt.group.is_empty() {
        details["group"] = json!(rt.group);
    }
    Ok((
        code,
        Json(json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})),
    )
        .into_response())
}

pub fn delete_collection(ctx: &Ctx<'_>, rt: &ResourceType, ns: Option<&str>) -> Result<Response> {
    let page = read::select(ctx.cluster, rt, ns, ctx.params)?;
    let mut items = Vec::new();
    for obj in page.items {
        let m = &obj["metadata"];
        let (ons, oname) = (
            m["namespace"].as_str().unwrap_or_default(),
            m["name"].as_str().unwrap_or_default(),
        );
        match ops::delete(ctx.cluster, rt, ons, oname, None, false) {
            Ok(o) => items.push((*o).clone()),
            Err(Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let rv = ctx.cluster.store.with(|s| s.current_rv());
    Ok(Json(json!({
        "apiVersion": rt.api_version(),
        "kind": rt.list_kind,
        "metadata": {"resourceVersion": rv.to_string()},
        "items": items,
    }))
    .into_response())
}
