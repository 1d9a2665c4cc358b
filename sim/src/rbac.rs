//! Optional authentication and RBAC: bearer tokens map to users; Roles, ClusterRoles and
//! their bindings stored in the cluster (loaded from YAML or created through the API)
//! grant verbs, evaluated like k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::crd::ResourceType;
use crate::error::{Error, Result};
use crate::store::State;

/// Group that bypasses authorization (as on a real cluster).
pub const MASTERS: &str = "system:masters";

/// A user a bearer token authenticates as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RbacUser {
    pub name: String,
    pub groups: Vec<String>,
}

impl RbacUser {
    pub fn admin() -> RbacUser {
        RbacUser {
            name: "sim-admin".into(),
            groups: vec![MASTERS.into(), "system:authenticated".into()],
        }
    }

    /// The identity of a ServiceAccount token.
    pub fn service_account(namespace: &str, name: &str) -> RbacUser {
        RbacUser {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
        }
    }
}

/// RBAC settings of a simulated cluster.
#[derive(Debug, Clone)]
pub struct RbacConfig {
    /// Token → user. Requests without a known token get 401.
    pub tokens: BTreeMap<String, RbacUser>,
    /// Token written into generated kubeconfigs (must map to a user in `system:masters`
    /// to be an admin; added automatically if absent from `tokens`).
    pub admin_token: String,
    /// Multi-document YAML (Roles, ClusterRoles, bindings, ...) created at start.
    pub manifests: Vec<String>,
}

impl Default for RbacConfig {
    fn default() -> Self {
        RbacConfig {
            tokens: BTreeMap::new(),
            admin_token: "sim-admin-token".into(),
            manifests: Vec::new(),
        }
    }
}

/// Answers a SelfSubjectAccessReview (`kubectl auth can-i`) for `user` (None: no RBAC,
/// everything is allowed). Unknown resources are judged by their group and plural alone.
pub fn review(
    registry: &crate::crd::Registry,
    authz: Option<&Authorizer>,
    state: &State,
    user: Option<&RbacUser>,
    mut body: Value,
) -> Value {
    let attrs = &body["spec"]["resourceAttributes"];
    let s = |k: &str| {
        attrs[k]
            .as_str()
            .filter(|v| !v.is_empty())
            .map(String::from)
    };
    let (group, resource) = (
        s("group").unwrap_or_default(),
        s("resource").unwrap_or_default(),
    );
    let known = registry
        .types()
        .iter()
        .find(|t| t.group == group && t.plural == resource)
        .map(|t| (**t).clone());
    let rt = known.unwrap_or_else(|| ResourceType {
        group: group.clone(),
        plural: resource.clone(),
        namespaced: true,
        ..registry.types()[0].as_ref().clone()
    });
    let (verb, ns, name, sub) = (
        s("verb").unwrap_or_default(),
        s("namespace"),
        s("name"),
        s("subresource"),
    );
    let req = Request {
        verb: &verb,
        rt: &rt,
        subresource: sub.as_deref(),
        namespace: ns.as_deref(),
        name: name.as_deref(),
    };
    let allowed = match (authz, user) {
        (Some(a), Some(u)) => a.authorize(state, u, &req).is_ok(),
        _ => true,
    };
    body["status"] = serde_json::json!({ "allowed": allowed });
    body["metadata"]["creationTimestamp"] = Value::Null;
    body
}

/// The name a list or watch asks for: like kube-apiserver's request info
/// (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go, `NewRequestInfo`), a collection
/// GET takes the name from a field selector that requires an exact `metadata.name`
/// (`opts.FieldSelector.RequiresExactMatch("metadata.name")`) when it is a valid path
/// segment (no `/` or `%`, not `.` or `..`). So a rule with `resourceNames` and
/// `list`/`watch` authorizes a list or watch of that one object, as the RBAC docs tell
/// clients to ask for it. The selector is parsed as request info parses it, before any
/// kind's field labels are checked; one that does not parse yields no name.
pub fn collection_name(params: &crate::query::Params) -> Option<String> {
    let selector = params.get("fieldSelector")?;
    let parsed = crate::selectors::FieldSelector::parse(selector, false).ok()?;
    parsed
        .requires_exact_match("metadata.name")
        .filter(|n| valid_path_segment(n))
        .map(str::to_owned)
}

/// apimachinery's `path.IsValidPathSegmentName` finds no error.
fn valid_path_segment(name: &str) -> bool {
    name != "." && name != ".." && !name.contains(['/', '%'])
}

/// One authorization question.
pub struct Request<'a> {
    pub verb: &'a str,
    pub rt: &'a ResourceType,
    pub subresource: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
}

#[derive(Debug, Clone)]
pub struct Authorizer {
    tokens: BTreeMap<String, RbacUser>,
}

const RBAC: &str = "rbac.authorization.k8s.io/v1";

impl Authorizer {
    pub fn new(cfg: &RbacConfig) -> Authorizer {
        let mut tokens = cfg.tokens.clone();
        tokens
            .entry(cfg.admin_token.clone())
            .or_insert_with(RbacUser::admin);
        Authorizer { tokens }
    }

    pub fn authenticate(&self, authorization: Option<&str>) -> Result<RbacUser> {
        authorization
            .and_then(|h| h.strip_prefix("Bearer "))
            .and_then(|t| self.tokens.get(t.trim()))
            .cloned()
            .ok_or_else(Error::unauthorized)
    }

    /// 403 with the real message unless some binding grants the request.
    pub fn authorize(&self, state: &State, user: &RbacUser, req: &Request<'_>) -> Result<()> {
        if user.groups.iter().any(|g| g == MASTERS) || allowed(state, user, req) {
            return Ok(());
        }
        Err(forbidden(user, req))
    }
}

fn forbidden(user: &RbacUser, req: &Request<'_>) -> Error {
    let resource = match req.subresource {
        Some(s) => format!("{}/{}", req.rt.plural, s),
        None => req.rt.plural.clone(),
    };
    let subject = match req.name {
        Some(n) => format!("{} \"{n}\"", req.rt.group_resource()),
        None => req.rt.group_resource(),
    };
    let scope = match req.namespace {
        Some(ns) if req.rt.namespaced => format!("in the namespace \"{ns}\""),
        _ => "at the cluster scope".into(),
    };
    // RBAC's denial reason is appended only when non-empty; plain denial shown here.
    let message = format!(
        "{subject} is forbidden: User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
        user.name, req.verb, req.rt.group
    );
    let mut details = serde_json::json!({ "kind": req.rt.plural });
    if let Some(n) = req.name {
        details["name"] = n.into();
    }
    if !req.rt.group.is_empty() {
        details["group"] = req.rt.group.clone().into();
    }
    Error::api(403, "Forbidden", message, Some(details))
}

fn subject_matches(subject: &Value, user: &RbacUser, binding_ns: &str) -> bool {
    let name = subject["name"].as_str().unwrap_or_default();
    match subject["kind"].as_str().unwrap_or_default() {
        "User" => user.name == name,
        "Group" => user.groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            let ns = subject["namespace"].as_str().unwrap_or(binding_ns);
            user.name == format!("system:serviceaccount:{ns}:{name}")
        }
        _ => false,
    }
}

fn contains(list: &Value, want: &str) -> bool {
    list.as_array()
        .is_some_and(|l| l.iter().any(|x| x == "*" || x == want))
}

fn rule_allows(rule: &Value, req: &Request<'_>) -> bool {
    let resource = match req.subresource {
        Some(s) => format!("{}/{}", req.rt.plural, s),
        None => req.rt.plural.clone(),
    };
    let names_ok = match rule["resourceNames"].as_array() {
        Some(names) if !names.is_empty() => req.name.is_some_and(|n| names.iter().any(|x| x == n)),
        _ => true,
    };
    contains(&rule["verbs"], req.verb)
        && contains(&rule["apiGroups"], &req.rt.group)
        && contains(&rule["resources"], &resource)
        && names_ok
}

fn role_rules(state: &State, role_ref: &Value, binding_ns: &str) -> Vec<Value> {
    let name = role_ref["name"].as_str().unwrap_or_default();
    let role = match role_ref["kind"].as_str() {
        Some("ClusterRole") => state.get(&format!("{RBAC}/clusterroles"), "", name),
        Some("Role") => state.get(&format!("{RBAC}/roles"), binding_ns, name),
        _ => None,
    };
    role.and_then(|r| r["rules"].as_array().cloned())
        .unwrap_or_default()
}

fn allowed(state: &State, user: &RbacUser, req: &Request<'_>) -> bool {
    let grants = |binding: &Value, ns: &str| {
        binding["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| subject_matches(s, user, ns))
            && role_rules(state, &binding["roleRef"], ns)
                .iter()
                .any(|r| rule_allows(r, req))
    };
    let cluster_wide = state
        .list(&format!("{RBAC}/clusterrolebindings"), None, None)
        .iter()
        .any(|b| grants(b, ""));
    if cluster_wide {
        return true;
    }
    match req.namespace.filter(|_| req.rt.namespaced) {
        Some(ns) => state
            .list(&format!("{RBAC}/rolebindings"), Some(ns), None)
            .iter()
            .any(|b| grants(b, ns)),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(selector: &str) -> Option<String> {
        collection_name(&[("fieldSelector".to_owned(), selector.to_owned())].into())
    }

    #[test]
    fn a_list_or_watch_takes_its_name_from_an_exact_metadata_name_selector() {
        assert_eq!(
            name("metadata.name=fleetgate-freeze").as_deref(),
            Some("fleetgate-freeze")
        );
        assert_eq!(name("metadata.name==a").as_deref(), Some("a"));
        assert_eq!(
            name("metadata.namespace=x,metadata.name=a").as_deref(),
            Some("a"),
            "any term of the conjunction"
        );
        assert_eq!(
            name("metadata.name=b,metadata.name=a").as_deref(),
            Some("a"),
            "the first term in sorted order"
        );
        // Not an exact match, not a name, or not a path segment: no name (a collection request).
        for selector in [
            "metadata.name!=a",
            "metadata.namespace=a",
            "spec.x=a",
            "metadata.name=..",
            "metadata.name=a/b",
            "metadata.name=a%2F",
            "garbage",
        ] {
            assert_eq!(name(selector), None, "{selector}");
        }
        assert_eq!(collection_name(&Default::default()), None);
    }
}
