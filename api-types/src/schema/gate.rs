//! OpenAPI schemas of the Gate manifest and its parts. The manifest types
//! live in the pure `fleetgate-policy` crate, which does not depend on
//! utoipa, so they are described here field for field (documentation only;
//! parsing always goes through the policy crate).

use std::collections::BTreeMap;

use utoipa::ToSchema;

/// A gate manifest (`apiVersion: fleetgate.io/v1`, `kind: Gate`). Unknown
/// fields are rejected.
#[derive(Debug, ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct GateManifest {
    /// `fleetgate.io/v1`.
    pub api_version: String,
    /// `Gate`.
    pub kind: String,
    pub metadata: GateMetadata,
    pub spec: GateSpecDoc,
}

/// Object metadata; `name` (a DNS-1123 label) identifies the gate.
#[derive(Debug, ToSchema)]
pub struct GateMetadata {
    pub name: String,
    pub labels: Option<BTreeMap<String, String>>,
    pub annotations: Option<BTreeMap<String, String>>,
}

/// What the gate governs and when it is open.
#[derive(Debug, ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct GateSpecDoc {
    pub description: Option<String>,
    /// Which clusters (at least one of names/selector).
    pub clusters: ClusterScopeDoc,
    /// Which Flux objects on those clusters (empty = all).
    pub targets: Option<TargetsDoc>,
    /// `suspend` (default) or `freezeSources`.
    #[schema(example = "suspend")]
    pub mode: Option<String>,
    /// `enforce` (default) or `warn`: a warn gate is evaluated and shown everywhere, but
    /// spokes hold nothing for it and report what it would hold.
    #[schema(example = "warn")]
    pub enforcement: Option<String>,
    /// `open` (default) or `closed`: the state when no rule applies.
    #[schema(example = "closed")]
    pub default: Option<String>,
    /// IANA zone for windows that set none (default UTC).
    #[schema(example = "Europe/Berlin")]
    pub time_zone: Option<String>,
    pub windows: Option<Vec<WindowDoc>>,
    /// How long an open/close request made on the Gate object in a cluster
    /// lasts (default `1h`, at most `168h`).
    #[schema(example = "1h")]
    pub window: Option<String>,
    pub local_requests: Option<LocalRequestsDoc>,
    pub approval: Option<ApprovalDoc>,
}

/// Overrides of the listed states wait at the hub until enough other people
/// approve them (docs/approvals.md).
#[derive(Debug, ToSchema)]
pub struct ApprovalDoc {
    /// How many people other than the requester must approve (1-10, default 1).
    pub approvers: Option<u32>,
    /// Who may approve (any match); absent: anyone with operator or higher
    /// over the gate and its clusters.
    pub from: Option<ApproversDoc>,
    /// Which override states need approval (default `[open]`).
    #[schema(example = json!(["open"]))]
    pub r#for: Option<Vec<String>>,
    /// How long a request waits for approval (default `24h`, at most `168h`).
    #[schema(example = "1h")]
    pub expires: Option<String>,
}

/// Approvers: people in `groups`, people by email or subject in `users`,
/// API tokens by name in `tokens`.
#[derive(Debug, ToSchema)]
pub struct ApproversDoc {
    pub groups: Option<Vec<String>>,
    pub users: Option<Vec<String>>,
    pub tokens: Option<Vec<String>>,
}

/// Whether requests made on the Gate object in a cluster are honoured. For
/// gates from the hub: closing yes, opening no, unless set here.
#[derive(Debug, ToSchema)]
pub struct LocalRequestsDoc {
    pub open: Option<bool>,
    pub close: Option<bool>,
}

/// Clusters by name and/or label selector (`selector: {}` = all clusters).
#[derive(Debug, ToSchema)]
pub struct ClusterScopeDoc {
    pub names: Option<Vec<String>>,
    pub selector: Option<LabelSelectorDoc>,
}

/// Which Flux objects a gate governs; each non-empty criterion must match.
#[derive(Debug, ToSchema)]
pub struct TargetsDoc {
    /// Kustomization, HelmRelease, GitRepository, OCIRepository,
    /// HelmRepository, Bucket, HelmChart, ImageUpdateAutomation.
    pub kinds: Option<Vec<String>>,
    pub namespaces: Option<Vec<String>>,
    pub names: Option<Vec<String>>,
    pub selector: Option<LabelSelectorDoc>,
}

/// A Kubernetes label selector; `{}` matches everything.
#[derive(Debug, ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct LabelSelectorDoc {
    pub match_labels: Option<BTreeMap<String, String>>,
    pub match_expressions: Option<Vec<LabelSelectorRequirementDoc>>,
}

/// One `matchExpressions` entry.
#[derive(Debug, ToSchema)]
pub struct LabelSelectorRequirementDoc {
    pub key: String,
    /// In, NotIn, Exists or DoesNotExist.
    pub operator: String,
    pub values: Option<Vec<String>>,
}

/// A window: exactly one of `schedule`+`duration` (5-field cron),
/// `rrule`+`dtstart`+`duration` (RFC 5545), `start`+`end` (dated), or `calendar` (every
/// event of an iCalendar, inline or a feed the hub fetches; see docs/calendars.md).
/// Times are wall-clock in `timeZone` (the window's, else the gate's).
#[derive(Debug, ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct WindowDoc {
    pub name: String,
    /// `allow` (opens the gate while active) or `deny` (closes it).
    pub kind: String,
    /// 5-field cron read exactly as Kubernetes CronJob reads it (robfig/cron v3), see
    /// docs/gate-reference.md "Cron dialect": `0 0 */2 * MON` = odd days or Mondays, `MON/2` = Mon, Wed, Fri.
    #[schema(example = "0 8 * * MON")]
    pub schedule: Option<String>,
    /// Go-style duration, e.g. `81h`, `1h30m`.
    #[schema(example = "81h")]
    pub duration: Option<String>,
    pub rrule: Option<String>,
    pub dtstart: Option<String>,
    pub start: Option<String>,
    pub end: Option<String>,
    pub time_zone: Option<String>,
    pub calendar: Option<CalendarDoc>,
    /// With `calendar`: only the events that match.
    #[schema(rename = "match")]
    pub event_match: Option<EventMatchDoc>,
}

/// A calendar window's events: exactly one of `ics` (inline RFC 5545 text) and `url`.
#[derive(Debug, ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct CalendarDoc {
    /// Inline RFC 5545 text, `BEGIN:VCALENDAR` … `END:VCALENDAR` (at most 1 MiB).
    pub ics: Option<String>,
    /// An `https://` (or `webcal://`) feed, fetched by the hub.
    #[schema(example = "https://calendar.example.com/freezes.ics")]
    pub url: Option<String>,
    /// How often the hub fetches `url` (default `1h`, at least `1m`; the feed's
    /// REFRESH-INTERVAL / X-PUBLISHED-TTL is a lower bound).
    pub refresh: Option<String>,
    /// How long after the last successful fetch the copy is stale (default `24h`).
    pub max_stale: Option<String>,
    /// `keep` (default: keep applying the last good copy) or `closed` (close the gate while
    /// stale).
    pub on_stale: Option<String>,
    pub auth: Option<CalendarAuthDoc>,
}

/// A private feed's `Authorization` header value, from a secret the hub holds.
#[derive(Debug, ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct CalendarAuthDoc {
    pub secret_ref: SecretRefDoc,
}

/// The name of a secret the hub holds (a file in `--calendar-secrets-dir`).
#[derive(Debug, ToSchema)]
pub struct SecretRefDoc {
    pub name: String,
}

/// Which events of a calendar count; every given criterion must hold.
#[derive(Debug, ToSchema)]
pub struct EventMatchDoc {
    /// SUMMARY contains this text (case-insensitive).
    pub summary: Option<String>,
    /// At least one of these CATEGORIES (case-insensitive).
    pub categories: Option<Vec<String>>,
}
