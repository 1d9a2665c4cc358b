//! `admission-webhook apply|list|get|delete`: the change-ticket admission webhooks
//! the hub asks before it accepts an override or an approval (unscoped admin;
//! docs/approvals.md#admission-webhooks).

use fleetgate_api_types::admission::{AdmissionWebhook, AdmissionWebhookSpec, FailurePolicy};

use crate::args::{AdmissionWebhookCmd, Format};
use crate::client::{Client, seg};
use crate::error::{Error, Result};
use crate::output::{self, Table};

pub async fn run(client: &Client, cmd: &AdmissionWebhookCmd, format: Format) -> Result<()> {
    match cmd {
        AdmissionWebhookCmd::Apply {
            name,
            url,
            operations,
            call_timeout,
            failure_policy,
            ca_bundle,
        } => {
            let ca_bundle = ca_bundle
                .as_ref()
                .map(|p| {
                    std::fs::read_to_string(p)
                        .map_err(|e| Error::Usage(format!("--ca-bundle {}: {e}", p.display())))
                })
                .transpose()?;
            let body = AdmissionWebhookSpec {
                url: url.clone(),
                operations: if operations.is_empty() {
                    vec!["override".into()]
                } else {
                    operations.clone()
                },
                timeout: call_timeout.clone(),
                failure_policy: if failure_policy == "Ignore" {
                    FailurePolicy::Ignore
                } else {
                    FailurePolicy::Fail
                },
                ca_bundle,
            };
            let path = format!("/admission-webhooks/{}", seg(name));
            let v: AdmissionWebhook = client.put(&path, &[], &body, None).await?;
            output::print_answer(format, &v, |v| {
                let what = if v.created_at == v.updated_at {
                    "created"
                } else {
                    "configured"
                };
                format!("admission-webhook/{name} {what}\n")
            })
        }
        AdmissionWebhookCmd::List => {
            let items: Vec<AdmissionWebhook> = client.get("/admission-webhooks", &[]).await?;
            output::print_answer(format, &items, |items| render(items))
        }
        AdmissionWebhookCmd::Get { name } => {
            let v: AdmissionWebhook = client
                .get(&format!("/admission-webhooks/{}", seg(name)), &[])
                .await?;
            output::print_answer(format, &v, |v| render(std::slice::from_ref(v)))
        }
        AdmissionWebhookCmd::Delete { name } => {
            let v: AdmissionWebhook = client
                .delete(&format!("/admission-webhooks/{}", seg(name)), &[])
                .await?;
            output::print_answer(format, &v, |_| {
                format!("admission-webhook/{name} deleted\n")
            })
        }
    }
}

fn render(items: &[AdmissionWebhook]) -> String {
    if items.is_empty() {
        return "No admission webhooks.\n".into();
    }
    let mut t = Table::new(&[
        "NAME",
        "OPERATIONS",
        "TIMEOUT",
        "FAILURE POLICY",
        "CA BUNDLE",
        "URL",
    ]);
    for w in items {
        t.row(vec![
            w.name.clone(),
            w.spec.operations.join(","),
            w.spec.timeout.clone().unwrap_or_default(),
            w.spec.failure_policy.as_str().into(),
            if w.spec.ca_bundle.is_some() {
                "yes"
            } else {
                "no"
            }
            .into(),
            w.spec.url.clone(),
        ]);
    }
    t.render()
}
