//! Publishes events.k8s.io/v1 Events about the objects the spoke changes. As
//! with kube's `Recorder`, a repeat within six minutes bumps the first event's
//! series; unlike it, the cache keeps a name and a count, not whole events.

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
};

use chrono::{DateTime, Duration, Utc};
use k8s_openapi::{
    api::{
        core::v1::ObjectReference,
        events::v1::{Event, EventSeries},
    },
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::json;

/// k8s-openapi's time types hold a `jiff::Timestamp`; the spoke's clock is chrono's.
fn micro_time(t: DateTime<Utc>) -> MicroTime {
    let nanos = i32::try_from(t.timestamp_subsec_nanos()).unwrap_or(0);
    MicroTime(Timestamp::new(t.timestamp(), nanos).unwrap_or(Timestamp::UNIX_EPOCH))
}

pub use super::text::fit_text;

/// The API server's limit on an Event's note, in bytes (k8s.io/kubernetes
/// pkg/apis/core/validation/events.go `NoteLengthLimit`); a longer one is refused.
pub const NOTE_LIMIT: usize = 1024;

/// How long a published event can still grow a series (kube-runtime's value).
const SERIES_TTL: Duration = Duration::minutes(6);

/// Which repeats fold into one event: same reason and action about the same
/// object (the reporter and the type are fixed for the spoke).
#[derive(Debug, Hash, PartialEq, Eq)]
struct Key {
    warning: bool,
    reason: &'static str,
    action: &'static str,
    api_version: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
}

#[derive(Debug)]
struct Published {
    namespace: String,
    name: String,
    /// Occurrences so far (1: created, no series yet).
    count: i32,
    last: DateTime<Utc>,
}

/// Writes Normal (and Warning) events as `controller` / `instance`.
pub struct EventRecorder {
    client: Client,
    controller: String,
    instance: String,
    published: Mutex<HashMap<Key, Published>>,
    /// Where every event also goes, with `--events-addr`.
    flux: Option<super::flux_events::FluxEvents>,
}

impl EventRecorder {
    pub fn new(client: Client, controller: &str, instance: Option<String>) -> Self {
        EventRecorder {
            client,
            controller: controller.to_owned(),
            instance: instance.unwrap_or_else(|| controller.to_owned()),
            published: Mutex::default(),
            flux: None,
        }
    }

    /// Also sends every event to Flux's notification-controller through `flux`.
    pub fn with_flux(mut self, flux: Option<super::flux_events::FluxEvents>) -> Self {
        self.flux = flux;
        self
    }

    /// Like [`EventRecorder::publish`], with the object's applied revision for Flux
    /// (`<group>/revision` in the notification-controller event).
    pub async fn publish_revision(
        &self,
        reason: &'static str,
        action: &'static str,
        note: String,
        regarding: &ObjectReference,
        revision: Option<&str>,
    ) -> Result<(), kube::Error> {
        self.publish_full(false, reason, action, note, regarding, revision)
            .await
    }

    /// Creates a Normal event regarding `regarding`, or bumps the series of
    /// the same event published less than six minutes ago.
    pub async fn publish(
        &self,
        reason: &'static str,
        action: &'static str,
        note: String,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        self.publish_typed(false, reason, action, note, regarding)
            .await
    }

    /// Like [`EventRecorder::publish`]; `warning` makes it a Warning event
    /// (something a person did was not honoured).
    pub async fn publish_typed(
        &self,
        warning: bool,
        reason: &'static str,
        action: &'static str,
        note: String,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        self.publish_full(warning, reason, action, note, regarding, None)
            .await
    }

    async fn publish_full(
        &self,
        warning: bool,
        reason: &'static str,
        action: &'static str,
        note: String,
        regarding: &ObjectReference,
        revision: Option<&str>,
    ) -> Result<(), kube::Error> {
        let now = Utc::now();
        // As fluxcd/pkg's recorder: only namespaced objects with a kind and a name (so the
        // cluster-scoped Gate objects' events stay Kubernetes Events only).
        let flux_object = [&regarding.kind, &regarding.name, &regarding.namespace]
            .iter()
            .all(|f| f.as_deref().is_some_and(|s| !s.is_empty()));
        if let Some(flux) = self.flux.as_ref().filter(|_| flux_object) {
            flux.send(super::flux_events::event(
                warning,
                reason,
                &note,
                regarding,
                revision,
                now,
                &self.controller,
                &self.instance,
            ));
        }
        let key = Key {
            warning,
            reason,
            action,
            api_version: regarding.api_version.clone(),
            kind: regarding.kind.clone(),
            namespace: regarding.namespace.clone(),
            name: regarding.name.clone(),
            uid: regarding.uid.clone(),
        };
        let repeat = {
            let mut published = self
                .published
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            published.retain(|_, p| p.last + SERIES_TTL > now);
            published
                .get(&key)
                .map(|p| (p.namespace.clone(), p.name.clone(), p.count + 1))
        };
        let published = match repeat {
            Some((namespace, name, count)) => {
                let series = EventSeries {
                    count,
                    last_observed_time: micro_time(now),
                };
                Api::<Event>::namespaced(self.client.clone(), &namespace)
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({ "series": series })),
                    )
                    .await?;
                Published {
                    namespace,
                    name,
                    count,
                    last: now,
                }
            }
            None => {
                let mut event = self.event(reason, action, note, regarding, now);
                if warning {
                    event.type_ = Some("Warning".to_owned());
                }
                let namespace = event.metadata.namespace.clone().unwrap_or_default();
                let name = event.metadata.name.clone().unwrap_or_default();
                Api::<Event>::namespaced(self.client.clone(), &namespace)
                    .create(&PostParams::default(), &event)
                    .await?;
                Published {
                    namespace,
                    name,
                    count: 1,
                    last: now,
                }
            }
        };
        self.published
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, published);
        Ok(())
    }

    fn event(
        &self,
        reason: &str,
        action: &str,
        note: String,
        regarding: &ObjectReference,
        now: DateTime<Utc>,
    ) -> Event {
        let nanos = now.timestamp_nanos_opt().unwrap_or_else(|| now.timestamp());
        let object = regarding.name.as_deref().unwrap_or(&self.controller);
        Event {
            action: Some(action.to_owned()),
            reason: Some(reason.to_owned()),
            event_time: Some(micro_time(now)),
            regarding: Some(regarding.clone()),
            note: Some(fit_text(&note, NOTE_LIMIT)),
            metadata: ObjectMeta {
                namespace: Some(
                    regarding
                        .namespace
                        .clone()
                        .unwrap_or_else(|| "default".to_owned()),
                ),
                name: Some(format!("{object}.{nanos:x}")),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            type_: Some("Normal".to_owned()),
            ..Event::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_fit_the_api_server() {
        assert_eq!(fit_text("bad \u{0} byte", NOTE_LIMIT), "bad \u{FFFD} byte");
        let long = "é".repeat(600); // 1200 bytes
        let fitted = fit_text(&long, NOTE_LIMIT);
        assert!(
            fitted.len() <= NOTE_LIMIT && fitted.ends_with("é ..."),
            "{}",
            fitted.len()
        );
        let exact = "x".repeat(NOTE_LIMIT);
        assert_eq!(fit_text(&exact, NOTE_LIMIT), exact);
    }
}
