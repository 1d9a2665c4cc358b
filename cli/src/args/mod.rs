//! Command-line grammar (clap derive). Only parsing lives here; each
//! subcommand's behaviour lives in `commands/`.

mod admission_webhook;
mod global;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use admission_webhook::AdmissionWebhookCmd;
pub use global::{Format, Global};

/// fleetgate — decide when Flux may change each cluster of a fleet.
#[derive(Debug, Parser)]
#[command(
    name = "fleetgate",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("FLEETGATE_COMMIT"), ")"),
    about,
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Gates: validate, preview, apply, list, open, close, ...
    #[command(subcommand)]
    Gate(GateCmd),
    /// Clusters: register, list, label, rotate tokens, ...
    #[command(subcommand)]
    Cluster(ClusterCmd),
    /// API tokens for people and pipelines (admin).
    #[command(subcommand)]
    Token(TokenCmd),
    /// Rollout waves of a gate: status, and (operator) pause, resume, abort, release-next.
    #[command(subcommand)]
    Rollout(RolloutCmd),
    /// Notification webhooks (admin): subscriptions, test messages, deliveries.
    #[command(subcommand)]
    Webhook(WebhookCmd),
    /// Fleet status (like `flux get`): every cluster, what holds it, held changes.
    Status(StatusArgs),
    /// The audit log, newest first.
    Audit(AuditArgs),
    /// Sign in through the hub's identity provider (device flow, or a
    /// browser redirect to this machine); later commands use that sign-in
    /// when no --token is given.
    Login,
    /// Forget this hub's sign-in (and revoke its refresh token).
    Logout,
    /// Who the hub takes you for: name, role, identity.
    Whoami,
    /// Dashboard sessions of people (admin): list, end a person's sessions.
    #[command(subcommand)]
    Session(SessionCmd),
    /// Access policies (unscoped admin): which groups, people, workloads and
    /// tokens hold which role over which clusters and gates.
    #[command(subcommand, name = "access-policy")]
    AccessPolicy(AccessPolicyCmd),
    /// Emergency stop (admin; a team's admin: its clusters): close every gate on the selected clusters (all by
    /// default) above every override, and hold every Kustomization/HelmRelease no gate
    /// covers, until `fleetgate unfreeze` (or --for/--until).
    Freeze(FreezeArgs),
    /// End freezes (admin): every freeze in force you may end, or --id; rollout gates
    /// reopen through their waves.
    Unfreeze {
        /// Why (required; recorded in the audit log).
        #[arg(long)]
        reason: String,
        /// Only this freeze (see `fleetgate freezes`).
        #[arg(long)]
        id: Option<String>,
    },
    /// Freezes in force (or starting later); --all also ended ones.
    Freezes {
        /// Also ended and expired freezes.
        #[arg(long)]
        all: bool,
    },
    /// Run the whole system locally: PostgreSQL, hub, simulated fleet with
    /// a spoke per cluster, the example gates. Ctrl-C stops and cleans up.
    ///
    /// Runs the `fleetgate-demo` program installed beside this one.
    #[command(disable_help_flag = true)]
    Demo {
        /// fleetgate-demo's options (`fleetgate demo --help` lists them).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Override requests waiting for approval (gates with spec.approval): list,
    /// approve, reject, withdraw.
    #[command(subcommand)]
    Override(OverrideCmd),
    /// Change-ticket admission webhooks (unscoped admin): endpoints the hub asks
    /// before it accepts an override or an approval.
    #[command(subcommand, name = "admission-webhook")]
    AdmissionWebhook(AdmissionWebhookCmd),
    /// The CLI's version and commit, and the hub's (`GET /api/v1/version`, no
    /// token needed); the client's prints even when the hub is unreachable.
    Version {
        /// Only the CLI's version: ask no hub.
        #[arg(long)]
        client: bool,
    },
    /// Print a shell completion script.
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
pub struct FreezeArgs {
    /// Why (required: the incident; shown on every frozen object's Event, Gate status,
    /// the dashboard banner and `fleetgate status`).
    #[arg(long)]
    pub reason: String,
    /// Only clusters matching this label selector (kubectl -l syntax).
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    /// Only these clusters (repeatable).
    #[arg(long = "cluster", value_name = "NAME")]
    pub clusters: Vec<String>,
    /// End by itself after this long (Go-style duration: 2h, 90m). Default: until unfrozen.
    #[arg(long = "for", value_name = "DURATION", conflicts_with = "until")]
    pub duration: Option<String>,
    /// End by itself at this instant (RFC 3339).
    #[arg(long)]
    pub until: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum OverrideCmd {
    /// Approval requests, newest first (every status unless --pending or --status).
    List {
        /// Only requests waiting for approval.
        #[arg(long, conflicts_with = "status")]
        pending: bool,
        /// Only requests in this status (pending, approved, rejected, expired, cancelled).
        #[arg(long)]
        status: Option<String>,
        /// Only this gate's requests.
        #[arg(long)]
        gate: Option<String>,
    },
    /// One request with its approvals.
    Get { id: String },
    /// Approve a pending request; the last approval needed creates the override.
    Approve {
        id: String,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Reject a pending request.
    Reject {
        id: String,
        /// Why (required).
        #[arg(long)]
        reason: String,
    },
    /// Withdraw your own pending request (admins: anyone's).
    Cancel {
        id: String,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum RolloutCmd {
    /// The gate's current (else latest) rollout: waves, each cluster's release and health,
    /// soak countdown, estimated release times.
    Status { gate: String },
    /// Release no further wave until resumed (operator).
    Pause { gate: String },
    /// Continue a paused or halted rollout; a halted wave is judged afresh (operator).
    Resume { gate: String },
    /// Stop: the remaining waves stay closed until the gate opens anew (operator).
    Abort { gate: String },
    /// Release the next wave now: approve a wave waiting for approval, or end the soak
    /// of a healthy wave (operator).
    ReleaseNext { gate: String },
}

#[derive(Debug, Subcommand)]
pub enum GateCmd {
    /// Check gate manifests offline; exits 6 naming the file and field path of each error.
    Validate {
        /// Gate manifest files or directories (YAML or JSON).
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<PathBuf>,
    },
    /// Show the state at --from and every change until --to. Offline with -f,
    /// or from the hub with a gate NAME (including active overrides).
    Preview(PreviewArgs),
    /// Create or update gates from files or directories (idempotent).
    Apply {
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<PathBuf>,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
        /// Also delete hub gates that no given file defines (the files are
        /// the whole truth, as in GitOps).
        #[arg(long)]
        prune: bool,
        /// Write nothing: show each gate's impact (clusters added and removed,
        /// states and next changes, the Flux objects it would govern and hold
        /// now) and, with --prune, the gates that would be deleted.
        #[arg(long)]
        dry_run: bool,
    },
    /// Show what `apply` would change, as a unified diff of the manifests.
    Diff {
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<PathBuf>,
        /// Exit with 8 when apply would change something.
        #[arg(long)]
        exit_code: bool,
    },
    /// List gates with their rules.
    List,
    /// Show one gate (the manifest with -o yaml/json).
    Get { name: String },
    /// Delete a gate (its overrides go with it).
    Delete {
        name: String,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Open a gate now (an override), for a duration.
    Open(OverrideArgs),
    /// Close a gate now (an override), for a duration.
    Close(OverrideArgs),
    /// Cancel an override (by id, or all active overrides of the gate with --all).
    Cancel {
        gate: String,
        /// Override id (see `fleetgate gate overrides GATE`).
        id: Option<String>,
        /// Cancel every active override of the gate.
        #[arg(long, conflicts_with = "id")]
        all: bool,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
    /// List the live overrides of a gate (active now or starting later).
    Overrides {
        gate: String,
        /// Also cancelled and expired ones.
        #[arg(long)]
        all: bool,
    },
}

#[derive(Debug, Args)]
pub struct PreviewArgs {
    /// Gate name on the hub (omit when using -f).
    #[arg(conflicts_with = "file", required_unless_present = "file")]
    pub name: Option<String>,
    /// Gate manifest file (offline preview).
    #[arg(short = 'f', long = "filename")]
    pub file: Option<PathBuf>,
    /// Start: RFC3339 (2026-11-27T07:00:00Z), or local time in the gate's
    /// zone (2026-11-27T08:00, 2026-11-27), or `now`. Default now.
    #[arg(long)]
    pub from: Option<String>,
    /// End, same forms. Default --from + 7 days.
    #[arg(long)]
    pub to: Option<String>,
}

#[derive(Debug, Args)]
pub struct OverrideArgs {
    pub name: String,
    /// How long the override lasts (Go-style duration: 90m, 1h, 1h30m).
    #[arg(
        long = "for",
        value_name = "DURATION",
        required_unless_present = "until_cancelled"
    )]
    pub duration: Option<String>,
    /// No expiry: the override lasts until `gate cancel` (break-glass).
    #[arg(long, conflicts_with = "duration")]
    pub until_cancelled: bool,
    /// Why (recorded in the audit log).
    #[arg(long)]
    pub reason: String,
    /// Only these clusters (repeatable). Default: the gate's whole scope.
    #[arg(long = "cluster", value_name = "NAME")]
    pub clusters: Vec<String>,
    /// Only clusters matching this label selector (kubectl -l syntax).
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    /// A change ticket (e.g. CHG0031337): recorded, and passed to the hub's admission webhooks.
    #[arg(long)]
    pub ticket: Option<String>,
    /// Break-glass (admins): skip the gate's approval; marked in audit and notifications.
    #[arg(long)]
    pub emergency: bool,
}

#[derive(Debug, Subcommand)]
pub enum ClusterCmd {
    /// Register a cluster; prints its spoke token once. With --issuer, the spoke signs in
    /// with the cluster's own projected ServiceAccount token (or a SPIFFE JWT-SVID) and no
    /// token is issued.
    Register {
        name: String,
        /// Labels (repeatable): -L region=eu -L tier=prod
        #[arg(short = 'L', long = "label", value_name = "KEY=VALUE")]
        labels: Vec<String>,
        /// The cluster's service-account issuer URL (or a SPIFFE trust domain's OIDC
        /// discovery provider): its spoke signs in with a JWT of this issuer.
        #[arg(long, value_name = "URL")]
        issuer: Option<String>,
        /// With --issuer: the issuer's keys, for an issuer the hub cannot reach (the output
        /// of `kubectl get --raw /openid/v1/jwks`).
        #[arg(long, value_name = "FILE", requires = "issuer")]
        jwks_file: Option<std::path::PathBuf>,
        /// With --issuer: the ServiceAccount the spoke runs as [default:
        /// fleetgate-system/fleetgate-spoke].
        #[arg(
            long,
            value_name = "NAMESPACE/NAME",
            requires = "issuer",
            conflicts_with = "spiffe_id"
        )]
        service_account: Option<String>,
        /// With --issuer: the SPIFFE ID of the spoke's JWT-SVID, instead of a ServiceAccount.
        #[arg(long, value_name = "spiffe://TRUST-DOMAIN/PATH", requires = "issuer")]
        spiffe_id: Option<String>,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Replace the pinned keys of a cluster registered with --jwks-file (after the cluster
    /// rotated its service-account signing key).
    SetJwks {
        name: String,
        /// The new JWKS (`kubectl get --raw /openid/v1/jwks`).
        #[arg(long, value_name = "FILE", required_unless_present = "discovery")]
        jwks_file: Option<std::path::PathBuf>,
        /// Drop the pinned keys and read them through the issuer's OIDC discovery.
        #[arg(long, conflicts_with = "jwks_file")]
        discovery: bool,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
    /// List clusters with labels and connection state.
    List {
        /// Only clusters matching this label selector.
        #[arg(short = 'l', long = "selector")]
        selector: Option<String>,
    },
    /// Show one cluster.
    Get { name: String },
    /// Change labels: key=value sets, key- removes (like kubectl label).
    Label {
        name: String,
        #[arg(required = true, value_name = "KEY=VALUE|KEY-")]
        changes: Vec<String>,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Issue a new spoke token (the old one stops working); prints it once.
    RotateToken {
        name: String,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Delete a cluster.
    Delete {
        name: String,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum AccessPolicyCmd {
    /// Create or update access policies from files or directories (idempotent).
    Apply {
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<PathBuf>,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
        /// Also delete hub policies that no given file defines (the files
        /// are the whole truth, as in GitOps).
        #[arg(long)]
        prune: bool,
    },
    /// Show what `apply` would change, as a unified diff of the manifests.
    Diff {
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<PathBuf>,
        /// Exit with 8 when apply would change something.
        #[arg(long)]
        exit_code: bool,
    },
    /// List access policies: role, subjects, scope.
    List,
    /// One access policy (`-o yaml` prints the manifest, ready for apply).
    Get { name: String },
    /// Delete an access policy; its subjects lose what it granted at their next request.
    Delete {
        name: String,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCmd {
    /// Create an API token; prints its secret once.
    Create {
        name: String,
        #[arg(long, value_parser = ["viewer", "operator", "admin"])]
        role: String,
        /// Where the role holds, as YAML or JSON (the shape of an access
        /// policy's `spec.scope`: `clusters` and `gates`, each `names` and/or
        /// `selector`), or `@FILE`. Default: everywhere.
        #[arg(long)]
        scope: Option<String>,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
    /// List API tokens (never their secrets).
    List,
    /// Revoke an API token by name or id.
    Revoke {
        name_or_id: String,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum WebhookCmd {
    /// Subscribe a URL to events; prints the `whsec_` signing secret once.
    Create {
        name: String,
        /// Where to POST (https unless the hub allows plain http).
        #[arg(long)]
        url: String,
        /// Event types (`gate.closed`, `gate.*`, ...), repeatable; none = all.
        #[arg(long = "event")]
        events: Vec<String>,
        /// Only events of this gate, repeatable; none = every gate.
        #[arg(long = "gate")]
        gates: Vec<String>,
        /// Only these clusters (names), repeatable.
        #[arg(long = "cluster")]
        clusters: Vec<String>,
        /// Only clusters matching this label selector (`env=prod,tier in (a,b)`).
        #[arg(short = 'l', long = "selector")]
        selector: Option<String>,
        /// standard, cloudevents, slack or teams.
        #[arg(long, default_value = "standard", value_parser = ["standard", "cloudevents", "slack", "teams"])]
        format: String,
        /// One message per cluster instead of one per (gate, instant, state).
        #[arg(long)]
        per_cluster: bool,
        /// Create it disabled.
        #[arg(long)]
        disabled: bool,
        #[arg(long, default_value = "")]
        description: String,
    },
    /// List subscriptions.
    List,
    /// Show one subscription.
    Get { name: String },
    /// Delete a subscription and its delivery history.
    Delete { name: String },
    /// Send a signed test message now and show the answer.
    Test { name: String },
    /// A new signing secret (printed once); the old one keeps signing for the overlap.
    RotateSecret {
        name: String,
        /// How long the old secret stays valid (Go-style, default 24h).
        #[arg(long)]
        overlap: Option<String>,
    },
    /// Recent deliveries, newest first; with an id, that delivery and every attempt.
    Deliveries {
        name: String,
        id: Option<i64>,
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Send a delivery again, with the same webhook-id.
    Redeliver { name: String, id: i64 },
    /// Enable a subscription (after the hub disabled it for a 410 Gone or
    /// days of failures): what waited is sent. Nothing else changes.
    Enable { name: String },
    /// Disable a subscription: nothing is sent to it until it is enabled.
    Disable { name: String },
}

#[derive(Debug, Subcommand)]
pub enum SessionCmd {
    /// Live sessions, newest first: everyone's (admin), or with --mine your own.
    List {
        /// Only this person's (subject or email).
        #[arg(long, conflicts_with = "mine")]
        subject: Option<String>,
        /// Your own sessions (you signed in with `fleetgate login`).
        #[arg(long)]
        mine: bool,
    },
    /// End sessions: every session of a person, or one session by --id (admin);
    /// with --mine, your own (one by --id, else all).
    #[command(group = clap::ArgGroup::new("which").required(true).multiple(true).args(["subject", "id", "mine"]))]
    End {
        /// The person's subject (`sub`) or email.
        #[arg(conflicts_with = "mine")]
        subject: Option<String>,
        /// Only this session (its ID from `session list`).
        #[arg(long)]
        id: Option<uuid::Uuid>,
        /// Your own sessions.
        #[arg(long)]
        mine: bool,
        /// The issuer (default: the login provider's).
        #[arg(long, conflicts_with = "mine")]
        issuer: Option<String>,
        /// Why (recorded in the audit log).
        #[arg(long, conflicts_with = "mine")]
        reason: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// One cluster in detail (its governed objects); omit for the fleet table.
    pub cluster: Option<String>,
    /// Only clusters matching this label selector.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    /// Only rows for this gate.
    #[arg(long)]
    pub gate: Option<String>,
    /// At most this many clusters (1–1000, by name), with the cursor of the next page;
    /// the summary still counts the whole fleet. Default: every cluster.
    #[arg(long, conflicts_with = "cluster")]
    pub limit: Option<u32>,
    /// The page after the one that printed this cursor (with `--limit`).
    #[arg(long, requires = "limit", conflicts_with = "cluster")]
    pub cursor: Option<String>,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Only entries by this actor (token name).
    #[arg(long)]
    pub actor: Option<String>,
    /// Only entries of this action (e.g. `gate.replace`, `override.create`).
    #[arg(long)]
    pub action: Option<String>,
    /// Only entries about this kind of target (`gate`, `override`, `cluster`,
    /// `api_token`, `rollout`, ...).
    #[arg(long)]
    pub kind: Option<String>,
    /// Only entries about this target (gate or cluster name).
    #[arg(long)]
    pub target: Option<String>,
    /// Only changes by this person: their `sub`, email or name.
    #[arg(long)]
    pub person: Option<String>,
    /// Only changes granted by this access policy, or made by a person in
    /// this group.
    #[arg(long)]
    pub team: Option<String>,
    /// Only entries at or after this time (RFC3339).
    #[arg(long)]
    pub since: Option<String>,
    /// Only entries before this time (RFC3339).
    #[arg(long)]
    pub until: Option<String>,
    /// At most this many entries (pages are fetched as needed).
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
}
