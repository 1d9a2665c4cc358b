//! `access-policy apply|diff|list|get|delete`: access policies as code
//! (unscoped admins). Like gates: apply compares the parsed manifests, so
//! formatting never causes an update; `--prune` deletes the hub's policies no
//! file defines, only after every file applied cleanly.

use std::path::PathBuf;

use fleetgate_api_types::{AccessPolicy, AccessPolicyRecord, parse_access_policy};
use serde::de::IgnoredAny;
use serde_json::json;

use crate::args::{AccessPolicyCmd, Format};
use crate::client::{Client, reason, seg};
use crate::error::{Error, Result};
use crate::manifests;
use crate::output::{self, Table};

/// One parsed, validated policy and where it came from (`file` or `file#2`).
struct Loaded {
    source: String,
    policy: AccessPolicy,
}

/// Every policy in `paths` (files, or directories' `*.yaml|yml|json`), each
/// validated; two manifests for one name are an error naming both files.
fn load_all(paths: &[PathBuf]) -> Result<Vec<Loaded>> {
    let mut out: Vec<Loaded> = Vec::new();
    for file in manifests::expand(paths)? {
        let text = std::fs::read_to_string(&file).map_err(|e| Error::io(file.display(), e))?;
        let docs = manifests::split_documents(&text);
        let many = docs.len() > 1;
        for (i, doc) in docs.into_iter().enumerate() {
            let source = if many {
                format!("{}#{}", file.display(), i + 1)
            } else {
                file.display().to_string()
            };
            let policy = parse_access_policy(doc).map_err(|e| Error::invalid(&source, e))?;
            policy.validate().map_err(|e| Error::invalid(&source, e))?;
            if let Some(prev) = out.iter().find(|l| l.policy.name() == policy.name()) {
                return Err(Error::invalid(
                    &source,
                    format!(
                        "metadata.name: access policy '{}' is also defined in {}",
                        policy.name(),
                        prev.source
                    ),
                ));
            }
            out.push(Loaded { source, policy });
        }
    }
    if out.is_empty() {
        return Err(Error::Usage("no access policy manifests found".into()));
    }
    Ok(out)
}

/// The hub's copy of a policy and its version (for If-Match); None if absent.
async fn current(client: &Client, name: &str) -> Result<Option<AccessPolicyRecord>> {
    match client
        .get::<AccessPolicyRecord>(&format!("/access-policies/{}", seg(name)), &[])
        .await
    {
        Ok(r) => Ok(Some(r)),
        Err(Error::Api { status: 404, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

fn yaml(p: &AccessPolicy) -> Result<String> {
    fleetgate_policy::yaml::to_string(p).map_err(|e| Error::Other(e.to_string()))
}

pub async fn run(client: &Client, cmd: &AccessPolicyCmd, format: Format) -> Result<()> {
    match cmd {
        AccessPolicyCmd::Apply {
            files,
            reason: why,
            prune,
        } => apply(client, files, why, *prune, format).await,
        AccessPolicyCmd::Diff { files, exit_code } => diff(client, files, *exit_code, format).await,
        AccessPolicyCmd::List => {
            let items: Vec<AccessPolicyRecord> = client.list("/access-policies", &[], None).await?;
            output::print_answer(format, &items, |items| render(items))
        }
        AccessPolicyCmd::Get { name } => {
            let r: AccessPolicyRecord = client
                .get(&format!("/access-policies/{}", seg(name)), &[])
                .await?;
            match format {
                // The manifest alone, so `get -o yaml > p.yaml` round-trips through apply.
                Format::Yaml | Format::Json => {
                    output::print(format, &r.manifest, |_| String::new())
                }
                Format::Table => {
                    print!("Name:     {}\nVersion:  {}\nManifest:\n", r.name, r.version);
                    for line in yaml(&r.manifest)?.lines() {
                        println!("  {line}");
                    }
                    Ok(())
                }
            }
        }
        AccessPolicyCmd::Delete { name, reason: why } => {
            client
                .delete::<()>(&format!("/access-policies/{}", seg(name)), &reason(why))
                .await?;
            let v = json!({"accessPolicy": name, "action": "deleted"});
            output::print(format, &v, |_| format!("accesspolicy/{name} deleted\n"))
        }
    }
}

async fn apply(
    client: &Client,
    files: &[PathBuf],
    why: &Option<String>,
    prune: bool,
    format: Format,
) -> Result<()> {
    let q = reason(why);
    let loaded = load_all(files)?;
    let mut results = Vec::new();
    let mut report = |name: &str, action: &str| {
        if format == Format::Table {
            // As we go, so a failure later still shows what was done.
            println!("accesspolicy/{name} {action}");
        }
        results.push(json!({"accessPolicy": name, "action": action}));
    };
    for l in &loaded {
        let name = l.policy.name();
        let path = format!("/access-policies/{}", seg(name));
        let action = match current(client, name).await? {
            Some(cur) if cur.manifest == l.policy => "unchanged",
            Some(cur) => {
                let etag = format!("\"{}\"", cur.version);
                client
                    .put::<_, IgnoredAny>(&path, &q, &l.policy, Some(&etag))
                    .await?;
                "configured"
            }
            None => {
                client
                    .put::<_, IgnoredAny>(&path, &q, &l.policy, None)
                    .await?;
                "created"
            }
        };
        report(name, action);
    }
    if prune {
        for p in client
            .list::<AccessPolicyRecord>("/access-policies", &[], None)
            .await?
        {
            if loaded.iter().any(|l| l.policy.name() == p.name) {
                continue;
            }
            client
                .delete::<()>(&format!("/access-policies/{}", seg(&p.name)), &q)
                .await?;
            report(&p.name, "pruned");
        }
    }
    if format != Format::Table {
        output::print(format, &results, |_| String::new())?;
    }
    Ok(())
}

async fn diff(client: &Client, files: &[PathBuf], exit_code: bool, format: Format) -> Result<()> {
    let loaded = load_all(files)?;
    let mut results = Vec::new();
    let mut any = false;
    for l in &loaded {
        let name = l.policy.name();
        let cur = current(client, name).await?;
        let (old, action) = match &cur {
            None => (String::new(), "created"),
            Some(c) if c.manifest == l.policy => (String::new(), "unchanged"),
            Some(c) => (yaml(&c.manifest)?, "configured"),
        };
        let text = if action == "unchanged" {
            None
        } else {
            crate::diff::unified(
                &format!("hub/access-policies/{name}"),
                &l.source,
                &old,
                &yaml(&l.policy)?,
            )
        };
        any |= action != "unchanged";
        if format == Format::Table
            && let Some(t) = &text
        {
            print!("{t}");
        }
        results.push(json!({"accessPolicy": name, "action": action, "diff": text}));
    }
    if format != Format::Table {
        output::print(format, &results, |_| String::new())?;
    }
    if exit_code && any {
        return Err(Error::Different);
    }
    Ok(())
}

fn render(items: &[AccessPolicyRecord]) -> String {
    if items.is_empty() {
        return "No access policies.\n".into();
    }
    let mut t = Table::new(&["NAME", "ROLE", "SUBJECTS", "CLUSTERS", "GATES", "VERSION"]);
    for r in items {
        let spec = &r.manifest.spec;
        let s = &spec.subjects;
        let mut subjects: Vec<String> = Vec::new();
        subjects.extend(s.groups.iter().map(|g| format!("group:{g}")));
        subjects.extend(s.users.iter().map(|u| format!("user:{u}")));
        subjects.extend(s.workloads.iter().map(|w| format!("workload:{}", w.issuer)));
        subjects.extend(s.tokens.iter().map(|n| format!("token:{n}")));
        let [clusters, gates] = scope_columns(Some(&spec.scope));
        t.row(vec![
            r.name.clone(),
            spec.role.to_string(),
            subjects.join(","),
            clusters,
            gates,
            r.version.to_string(),
        ]);
    }
    t.render()
}

/// The CLUSTERS and GATES columns of a scope: `*` where it is unlimited,
/// else the scope's part as compact JSON.
pub(crate) fn scope_columns(scope: Option<&fleetgate_api_types::AccessScope>) -> [String; 2] {
    let part = |v: Option<serde_json::Value>| v.map_or_else(|| "*".to_string(), |v| v.to_string());
    let scope = scope.cloned().unwrap_or_default();
    [
        part(
            scope
                .clusters
                .as_ref()
                .and_then(|c| serde_json::to_value(c).ok()),
        ),
        part(
            scope
                .gates
                .as_ref()
                .and_then(|g| serde_json::to_value(g).ok()),
        ),
    ]
}
