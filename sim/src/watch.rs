//! Watch (`?watch=true`): newline-delimited JSON events with resourceVersion semantics.
//! rv unset/"0" starts with synthetic ADDED events for the current state (like the watch
//! cache); rv=N replays history after N, or answers a 410 `Expired` ERROR event when N
//! was compacted; `allowWatchBookmarks` adds periodic BOOKMARKs; `sendInitialEvents`
//! ends the initial state with a BOOKMARK annotated `k8s.io/initial-events-end`. Watches
//! of either Events API also see the other's objects, converted (see `events`).

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::cluster::Cluster;
use crate::crd::ResourceType;
use crate::error::{Error, Result};
use crate::events;
use crate::query::Params;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::store::{EventType, Since, WatchEvent};

struct Filter {
    rt: Arc<ResourceType>,
    key: String,
    /// The other Events API's storage key: its objects are shown converted.
    twin: Option<&'static str>,
    ns: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(obj) && self.fields.matches(obj)
    }

    /// The event this watcher sees, if any (selector enter/leave → ADDED/DELETED).
    fn translate(&self, ev: &WatchEvent) -> Option<(EventType, Arc<Value>)> {
        let twin = self.twin.is_some_and(|t| ev.key == t);
        if (ev.key != self.key && !twin) || self.ns.as_ref().is_some_and(|n| *n != ev.namespace) {
            return None;
        }
        if twin {
            let converted = WatchEvent {
                object: events::convert(&self.rt, &ev.object),
                prev: ev.prev.as_ref().map(|p| events::convert(&self.rt, p)),
                ..ev.clone()
            };
            return self.translate_own(&converted);
        }
        self.translate_own(ev)
    }

    fn translate_own(&self, ev: &WatchEvent) -> Option<(EventType, Arc<Value>)> {
        let now = self.matches(&ev.object);
        match ev.type_ {
            EventType::Modified => {
                let before = ev.prev.as_ref().is_some_and(|p| self.matches(p));
                match (before, now) {
                    (true, true) => Some((EventType::Modified, ev.object.clone())),
                    (false, true) => Some((EventType::Added, ev.object.clone())),
                    (true, false) => Some((EventType::Deleted, ev.object.clone())),
                    (false, false) => None,
                }
            }
            t => now.then(|| (t, ev.object.clone())),
        }
    }
}

/// One watch event on the wire: `{"type":…,"object":…}` (serialised from a borrow: a
/// whole-object clone per event and watcher was a large share of the server's time).
#[derive(serde::Serialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    type_: &'a str,
    object: &'a Value,
}

fn line(type_: &str, object: &Value) -> Bytes {
    let mut v = serde_json::to_vec(&Line { type_, object }).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}

fn bookmark(rt: &ResourceType, rv: u64, initial_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    line(
        "BOOKMARK",
        &json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": meta}),
    )
}

fn flag(params: &Params, name: &str) -> bool {
    params.get(name).is_some_and(|v| v == "true" || v == "1")
}

fn watch_response(body: Body) -> Response {
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

pub fn serve(
    cluster: Arc<Cluster>,
    rt: Arc<ResourceType>,
    ns: Option<String>,
    params: &Params,
    metadata_only: bool,
) -> Result<Response> {
    cluster
        .watches
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let filter = Filter {
        rt: rt.clone(),
        key: rt.key(),
        twin: events::twin_key(&rt),
        ns: ns.clone(),
        labels: LabelSelector::parse(params.get("labelSelector").map_or("", |s| s))?,
        fields: FieldSelector::parse(params.get("fieldSelector").map_or("", |s| s), rt.custom)?,
    };
    let bookmarks = flag(params, "allowWatchBookmarks");
    let send_initial = flag(params, "sendInitialEvents");
    let timeout = match params.get("timeoutSeconds").map(|t| t.parse::<u64>()) {
        Some(Ok(t)) if t > 0 => Duration::from_secs(t),
        Some(Err(_)) => return Err(Error::bad_request("timeoutSeconds: invalid value")),
        _ => Duration::from_secs(1800),
    };
    let rv_param = params.get("resourceVersion").cloned().unwrap_or_default();
    let from_now = rv_param.is_empty() || rv_param == "0" || send_initial;
    let from_rv = if from_now {
        0
    } else {
        rv_param
            .parse::<u64>()
            .map_err(|_| Error::bad_request(format!("invalid resource version: {rv_param}")))?
    };
    // Atomically: the starting events and a receiver for everything after them.
    let start = cluster.store.with(|s| {
        if from_now {
            let mut current = s.list(&filter.key, ns.as_deref(), None);
            if let Some(twin) = filter.twin {
                let converted = s.list(twin, ns.as_deref(), None);
                current.extend(converted.iter().map(|o| events::convert(&rt, o)));
            }
            let initial: Vec<(EventType, Arc<Value>)> = current
                .into_iter()
                .filter(|o| filter.matches(o))
                .map(|o| (EventType::Added, o))
                .collect();
            Ok((initial, s.current_rv(), s.subscribe()))
        } else {
            match s.since(from_rv) {
                Since::TooOld(oldest) => Err(oldest),
                Since::Events(evs, rx) => {
                    let progress = evs.last().map_or(from_rv, |e| e.rv);
                    let initial = evs.iter().filter_map(|e| filter.translate(e)).collect();
                    Ok((initial, progress, rx))
                }
            }
        }
    });
    let (initial, mut progress, mut rx) = match start {
        Ok(s) => s,
        Err(oldest) => {
            // The real server answers 200 and a single ERROR event carrying a 410 Status.
            let status = Error::gone(format!(
                "too old resource version: {from_rv} ({})",
                oldest.saturating_sub(1)
            ))
            .status()
            .to_json();
            return Ok(watch_response(Body::from(line("ERROR", &status))));
        }
    };
    let shutdown = cluster.shutdown.clone();
    let interval = cluster.bookmark_interval;
    let stream = async_stream::stream! {
        for (t, obj) in initial {
            let obj = if metadata_only { Arc::new(crate::handlers::read::partial(&obj)) } else { obj };
            yield Ok::<Bytes, std::convert::Infallible>(line(t.as_str(), &obj));
        }
        if send_initial && bookmarks {
            yield Ok(bookmark(&rt, progress, true));
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = &mut deadline => break,
                _ = ticker.tick(), if bookmarks => yield Ok(bookmark(&rt, progress, false)),
                ev = rx.recv() => match ev {
                    Ok(ev) => {
                        if ev.rv <= progress {
                            continue;
                        }
                        progress = ev.rv;
                        if let Some((t, obj)) = filter.translate(&ev) {
                            let obj = if metadata_only { Arc::new(crate::handlers::read::partial(&obj)) } else { obj };
                            yield Ok(line(t.as_str(), &obj));
                        }
                    }
                    // A watcher too slow for the broadcast buffer is closed, as the real
                    // cacher closes slow watchers; the client re-watches from its last rv.
                    Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => break,
                },
            }
        }
    };
    Ok(watch_response(Body::from_stream(stream)))
}
