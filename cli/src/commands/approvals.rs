//! `override list|get|approve|reject|cancel`: override requests waiting for other
//! people's approval (gates with `spec.approval`; `gate open` answers `pending #id`).

use fleetgate_api_types::{ApprovalDecision, ApprovalRequest};

use crate::args::{Format, OverrideCmd};
use crate::client::{Client, seg};
use crate::error::{Error, Result};
use crate::output::{self, Table};

pub async fn run(client: &Client, cmd: &OverrideCmd, format: Format) -> Result<()> {
    match cmd {
        OverrideCmd::List {
            pending,
            status,
            gate,
        } => {
            let mut q = Vec::new();
            if *pending {
                q.push(("status", "pending".to_string()));
            } else if let Some(s) = status {
                q.push(("status", s.clone()));
            }
            if let Some(g) = gate {
                q.push(("gate", g.clone()));
            }
            let items: Vec<ApprovalRequest> = client.list("/approvals", &q, None).await?;
            output::print_answer(format, &items, |items| render(items))
        }
        OverrideCmd::Get { id } => {
            let r: ApprovalRequest = client.get(&format!("/approvals/{}", seg(id)), &[]).await?;
            output::print_answer(format, &r, detail)
        }
        OverrideCmd::Approve { id, reason } => {
            let body = ApprovalDecision {
                reason: reason.clone().filter(|r| !r.trim().is_empty()),
            };
            let r: ApprovalRequest = client
                .post(&format!("/approvals/{}/approve", seg(id)), &[], &body)
                .await?;
            output::print_answer(format, &r, |r| match (&r.status[..], r.override_id) {
                ("approved", Some(o)) => format!(
                    "request {} approved: gate/{} {} (override {o})\n",
                    r.id,
                    r.gate,
                    if r.state == "open" {
                        "opened"
                    } else {
                        "closed"
                    }
                ),
                _ => format!(
                    "request {} approved by you: {} of {} approvals\n",
                    r.id,
                    r.approvals.len(),
                    r.required
                ),
            })
        }
        OverrideCmd::Reject { id, reason } => {
            if reason.trim().is_empty() {
                return Err(Error::Usage("--reason must not be empty".into()));
            }
            let body = ApprovalDecision {
                reason: Some(reason.clone()),
            };
            let r: ApprovalRequest = client
                .post(&format!("/approvals/{}/reject", seg(id)), &[], &body)
                .await?;
            output::print_answer(format, &r, |r| {
                format!("request {} rejected (gate/{})\n", r.id, r.gate)
            })
        }
        OverrideCmd::Cancel { id, reason } => {
            let r: ApprovalRequest = client
                .delete(
                    &format!("/approvals/{}", seg(id)),
                    &crate::client::reason(reason),
                )
                .await?;
            output::print_answer(format, &r, |r| {
                format!("request {} cancelled (gate/{})\n", r.id, r.gate)
            })
        }
    }
}

fn render(items: &[ApprovalRequest]) -> String {
    if items.is_empty() {
        return "No approval requests.\n".into();
    }
    let mut t = Table::new(&[
        "ID",
        "GATE",
        "STATE",
        "CLUSTERS",
        "FOR",
        "STATUS",
        "APPROVALS",
        "REQUESTER",
        "EXPIRES",
        "REASON",
    ]);
    for r in items {
        t.row(vec![
            r.id.to_string(),
            r.gate.clone(),
            r.state.clone(),
            super::overrides::scope(r.clusters.as_ref()),
            r.duration
                .clone()
                .unwrap_or_else(|| "until cancelled".into()),
            r.status.clone(),
            format!("{}/{}", r.approvals.len(), r.required),
            r.requester.clone(),
            output::time(&r.expires_at),
            match &r.ticket {
                Some(t) => format!("{} ({t})", r.reason),
                None => r.reason.clone(),
            },
        ]);
    }
    t.render()
}

fn detail(r: &ApprovalRequest) -> String {
    let mut out = format!(
        "request {}: {} gate/{} on {} for {}\nstatus:    {}\nrequester: {}\nreason:    {}\n",
        r.id,
        r.state,
        r.gate,
        super::overrides::scope(r.clusters.as_ref()),
        r.duration.as_deref().unwrap_or("until cancelled"),
        r.status,
        r.requester,
        r.reason
    );
    if let Some(t) = &r.ticket {
        out.push_str(&format!("ticket:    {t}\n"));
    }
    out.push_str(&format!(
        "expires:   {}\napprovals: {} of {}\n",
        output::time(&r.expires_at),
        r.approvals.len(),
        r.required
    ));
    for a in &r.approvals {
        out.push_str(&format!(
            "  - {} at {}{}\n",
            a.approver,
            output::time(&a.at),
            a.reason
                .as_deref()
                .map(|x| format!(": {x}"))
                .unwrap_or_default()
        ));
    }
    if let (Some(by), Some(at)) = (&r.decided_by, &r.decided_at) {
        out.push_str(&format!(
            "decided:   {} by {by} at {}{}\n",
            r.status,
            output::time(at),
            r.decision_reason
                .as_deref()
                .map(|x| format!(": {x}"))
                .unwrap_or_default()
        ));
    }
    if let Some(o) = r.override_id {
        out.push_str(&format!("override:  {o}\n"));
    }
    out
}
