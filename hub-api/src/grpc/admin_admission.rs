//! `AdminService` admission-webhook methods: the REST
//! `/api/v1/admission-webhooks` operations over gRPC, calling the same
//! service-layer methods (unscoped admin, validation, egress checks, audit),
//! with conversions between the REST types and the admin messages.

use fleetgate_api_types::admission::{AdmissionWebhook, AdmissionWebhookSpec, FailurePolicy};
use fleetgate_proto::time::to_timestamp;
use fleetgate_proto::v1 as pb;
use tonic::{Request, Response, Status};

use super::admin::{AdminApi, Res, ok};
use super::admin_convert::non_empty;
use super::auth::api_actor;
use super::convert::invalid;
use crate::Error;

/// The request's spec as the REST type; INVALID_ARGUMENT naming the field.
fn spec_in(spec: Option<pb::AdmissionWebhookSpec>) -> Result<AdmissionWebhookSpec, Status> {
    let s = spec.ok_or_else(|| invalid("spec", "required"))?;
    let failure_policy = match s.failure_policy.as_str() {
        "" | "Fail" => FailurePolicy::Fail,
        "Ignore" => FailurePolicy::Ignore,
        other => {
            return Err(invalid(
                "spec.failure_policy",
                format!("'{other}' is not Fail or Ignore"),
            ));
        }
    };
    Ok(AdmissionWebhookSpec {
        url: s.url,
        operations: if s.operations.is_empty() {
            vec!["override".into()]
        } else {
            s.operations
        },
        timeout: non_empty(&s.timeout).map(String::from),
        failure_policy,
        ca_bundle: non_empty(&s.ca_bundle).map(String::from),
    })
}

/// A stored webhook as its admin message.
fn info(w: AdmissionWebhook) -> pb::AdmissionWebhookInfo {
    pb::AdmissionWebhookInfo {
        name: w.name,
        spec: Some(pb::AdmissionWebhookSpec {
            url: w.spec.url,
            operations: w.spec.operations,
            timeout: w.spec.timeout.unwrap_or_default(),
            failure_policy: w.spec.failure_policy.as_str().into(),
            ca_bundle: w.spec.ca_bundle.unwrap_or_default(),
        }),
        created_at: Some(to_timestamp(w.created_at)),
        updated_at: Some(to_timestamp(w.updated_at)),
    }
}

/// The service's field names (REST's) as this message's paths: `url` →
/// `spec.url`, `caBundle` → `spec.ca_bundle`; `name` stays.
fn spec_fields(e: Error) -> Error {
    match e {
        Error::Invalid { field, message } if field != "name" => Error::Invalid {
            field: format!(
                "spec.{}",
                match field.as_str() {
                    "caBundle" => "ca_bundle",
                    "failurePolicy" => "failure_policy",
                    other => other,
                }
            ),
            message,
        },
        other => other,
    }
}

impl AdminApi {
    pub(super) async fn admission_list(
        &self,
        req: Request<pb::ListAdmissionWebhooksRequest>,
    ) -> Res<pb::ListAdmissionWebhooksResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let all = ok(self.service.list_admission_webhooks(&actor).await)?;
        Ok(Response::new(pb::ListAdmissionWebhooksResponse {
            webhooks: all.into_iter().map(info).collect(),
        }))
    }

    pub(super) async fn admission_get(
        &self,
        req: Request<pb::GetAdmissionWebhookRequest>,
    ) -> Res<pb::AdmissionWebhookInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let w = ok(self
            .service
            .get_admission_webhook(&actor, &req.get_ref().name)
            .await)?;
        Ok(Response::new(info(w)))
    }

    pub(super) async fn admission_apply(
        &self,
        req: Request<pb::ApplyAdmissionWebhookRequest>,
    ) -> Res<pb::AdmissionWebhookInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let spec = spec_in(r.spec)?;
        let w = self
            .service
            .apply_admission_webhook(&actor, &r.name, spec)
            .await
            .map_err(spec_fields);
        Ok(Response::new(info(ok(w)?)))
    }

    pub(super) async fn admission_delete(
        &self,
        req: Request<pb::DeleteAdmissionWebhookRequest>,
    ) -> Res<pb::AdmissionWebhookInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let w = ok(self
            .service
            .delete_admission_webhook(&actor, &req.get_ref().name)
            .await)?;
        Ok(Response::new(info(w)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_fields_take_the_defaults_and_errors_name_the_field() {
        let s = spec_in(Some(pb::AdmissionWebhookSpec {
            url: "https://change.example.com/check".into(),
            ..Default::default()
        }))
        .unwrap();
        assert_eq!(s.operations, ["override"]);
        assert_eq!(s.failure_policy, FailurePolicy::Fail);
        assert_eq!((s.timeout, s.ca_bundle), (None, None));
        let e = spec_in(Some(pb::AdmissionWebhookSpec {
            failure_policy: "fail".into(),
            ..Default::default()
        }))
        .unwrap_err();
        assert!(e.message().starts_with("spec.failure_policy: "), "{e:?}");
        assert!(spec_in(None).unwrap_err().message().starts_with("spec: "));
        let field = |f: &str| match spec_fields(Error::invalid(f, "bad")) {
            Error::Invalid { field, .. } => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field("caBundle"), "spec.ca_bundle");
        assert_eq!(field("operations[1]"), "spec.operations[1]");
        assert_eq!(field("name"), "name");
    }
}
