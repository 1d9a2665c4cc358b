//! Every budget on outside input that can open a gate or grow what a spoke receives, decided
//! once here. Input over a budget is refused as a whole at the boundary (a manifest with 422 /
//! `INVALID_ARGUMENT` naming the field, a feed `failing`), never cut short: a cut calendar or
//! selector could open a gate. The budgets are chosen so that no real calendar or gate meets
//! them, and together so that one gate, and so one cluster's snapshot, always fits the gRPC
//! message limit the hub sends with and the spoke decodes with. Guide: docs/errors-and-limits.md.

use chrono::Duration;

/// The largest calendar text a feed (`calendar.url`) may serve. Google's public holiday
/// calendars are 50–150 KiB; a freeze calendar a team keeps is a few KiB.
pub const CALENDAR_MAX_BYTES: usize = 1024 * 1024;

/// The largest inline calendar (`calendar.ics`): it travels inside the manifest, to every
/// spoke in scope; a larger calendar is served as a feed.
pub const INLINE_ICS_MAX_BYTES: usize = 512 * 1024;

/// The most VEVENTs one calendar text may hold (with their RECURRENCE-ID exceptions).
pub const CALENDAR_MAX_EVENTS: usize = 10_000;

/// The most recurrence instances expanding one calendar text may step through, all rules
/// together, counting instances before the horizon and those an EXDATE removes: the work
/// budget. A daily event started in 1990 steps through about 13,500.
pub const CALENDAR_MAX_INSTANCES: usize = 100_000;

/// The most occurrences one calendar window may have in the horizon (after `match`). A daily
/// event has 431 in the default horizon (31 days back, 400 ahead); an hourly one 10,344.
pub const CALENDAR_MAX_OCCURRENCES: usize = 5_000;

/// The most occurrences all the calendar windows of one gate may have in the horizon together.
pub const GATE_MAX_OCCURRENCES: usize = 10_000;

/// The shortest spacing a recurrence rule may ask for: `FREQ=SECONDLY`, `FREQ=MINUTELY` with an
/// `INTERVAL` under an hour, and several `BYSECOND` or `BYMINUTE` values are refused before
/// anything is expanded. Google Calendar's and Outlook's editors offer nothing finer than daily.
pub const CALENDAR_MIN_RECURRENCE: Duration = Duration::hours(1);

/// An occurrence's SUMMARY is kept to this many bytes (cut at a character boundary, `…`
/// appended): it is only shown in reasons, and it is what makes occurrences large.
pub const OCCURRENCE_SUMMARY_MAX_BYTES: usize = 128;

/// The largest gate manifest, as JSON (inline calendars included). Below the hub's default
/// request body limit (1 MiB), so a manifest at the budget can be sent.
pub const GATE_MANIFEST_MAX_BYTES: usize = 768 * 1024;

/// The most windows one gate may have.
pub const GATE_MAX_WINDOWS: usize = 100;

/// The most terms one label selector may have (`matchLabels` pairs and `matchExpressions`).
pub const SELECTOR_MAX_TERMS: usize = 64;

/// The most values one `matchExpressions` term may list.
pub const SELECTOR_MAX_VALUES: usize = 256;

/// The most entries a list of names may hold (`spec.clusters.names`, `spec.targets.names`,
/// `spec.targets.namespaces`, `spec.objects` lists).
pub const NAMES_MAX: usize = 1_000;

/// The largest encoded size of one gate in a snapshot (`GateRule`: its manifest and its feeds'
/// occurrences), implied by the budgets above: a manifest of [`GATE_MANIFEST_MAX_BYTES`] plus
/// [`GATE_MAX_OCCURRENCES`] occurrences of at most [`OCCURRENCE_MAX_ENCODED_BYTES`] each,
/// with room for the other fields. A test encodes the largest gate the budgets allow.
pub const GATE_RULE_MAX_BYTES: usize = 3 * 1024 * 1024;

/// An upper bound on one encoded occurrence: two timestamps (at most 11 bytes each with their
/// tags and lengths, plus nanos), a summary of [`OCCURRENCE_SUMMARY_MAX_BYTES`] (plus `…`) and
/// the message's own tag and length.
pub const OCCURRENCE_MAX_ENCODED_BYTES: usize = 2 * 18 + OCCURRENCE_SUMMARY_MAX_BYTES + 3 + 3 + 4;

/// The largest snapshot the hub sends one cluster. A cluster whose gates together are larger is
/// held closed as under a fleet freeze (overrides, freezes included, still reach it) until its
/// gates fit, and the hub says so on the cluster's status and in its metrics.
pub const SNAPSHOT_MAX_BYTES: usize = 16 * 1024 * 1024;

/// The gRPC message limit of the spoke stream: the hub encodes with it and the spoke decodes
/// with it, so a snapshot within [`SNAPSHOT_MAX_BYTES`] (plus the message's envelope) always
/// arrives.
pub const GRPC_MAX_MESSAGE_BYTES: usize = SNAPSHOT_MAX_BYTES + 1024 * 1024;

const _: () = assert!(
    GATE_MANIFEST_MAX_BYTES + GATE_MAX_OCCURRENCES * OCCURRENCE_MAX_ENCODED_BYTES + 64 * 1024
        <= GATE_RULE_MAX_BYTES
);
const _: () = assert!(GATE_RULE_MAX_BYTES <= SNAPSHOT_MAX_BYTES);
const _: () = assert!(CALENDAR_MAX_OCCURRENCES <= GATE_MAX_OCCURRENCES);
const _: () = assert!(INLINE_ICS_MAX_BYTES < GATE_MANIFEST_MAX_BYTES);
const _: () = assert!(INLINE_ICS_MAX_BYTES <= CALENDAR_MAX_BYTES);

// Answers the hub reads from the services it calls. An admission webhook's answer can let an
// override (and so an open gate) through and an identity provider's can let someone in, so
// they have budgets too, and fail closed over them.

/// The largest answer an admission webhook may give (`{"allowed": …, "message": …}` is a few
/// hundred bytes). A larger answer is not read and the request is denied, whatever the
/// webhook's `failurePolicy`: the webhook did answer, with something the hub refuses to read.
pub const ADMISSION_ANSWER_MAX_BYTES: usize = 64 * 1024;

/// How long the hub waits for an admission webhook's whole answer when the webhook sets no
/// `timeout`. Past it the call failed, and `failurePolicy` decides (`Fail`, the default, denies).
pub const ADMISSION_DEFAULT_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// The longest `timeout` an admission webhook may set.
pub const ADMISSION_MAX_TIME: std::time::Duration = std::time::Duration::from_secs(30);

/// The largest OpenID discovery document the hub reads (Google's, Microsoft's and Okta's are
/// 1–6 KiB). Over it sign-in fails and an issuer's keys cannot be found.
pub const DISCOVERY_MAX_BYTES: usize = 64 * 1024;

/// The largest JWKS the hub reads from a provider or accepts pinned on a cluster (a provider's
/// key set with `x5c` certificate chains is 2–20 KiB). Over it the keys are not replaced: the
/// keys fetched before stay in use.
pub const JWKS_MAX_BYTES: usize = 64 * 1024;

/// The largest token endpoint answer the hub reads (an ID token with group claims, access and
/// refresh tokens: about 10 KiB at most in practice). Over it the sign-in or refresh fails.
pub const TOKEN_ANSWER_MAX_BYTES: usize = 64 * 1024;

/// How long the hub waits for one identity provider answer, body included (`--egress-timeout`
/// if that is shorter). Past it the call failed: no keys replaced, no sign-in.
pub const IDENTITY_ANSWER_MAX_TIME: std::time::Duration = std::time::Duration::from_secs(10);

const _: () = assert!(ADMISSION_DEFAULT_TIME.as_millis() <= ADMISSION_MAX_TIME.as_millis());

/// Kubernetes' limit on one ConfigMap's `data` and `binaryData` together, in bytes
/// (k8s.io/kubernetes pkg/apis/core/validation/validation.go `ValidateConfigMap`, checked
/// against `core.MaxSecretSize`). The spoke persists its snapshot within it.
pub const CONFIGMAP_MAX_BYTES: usize = 1024 * 1024;

/// The most bytes of the persisted snapshot one ConfigMap carries: the head's gzip, or one
/// shard. The rest of [`CONFIGMAP_MAX_BYTES`] is room for the head's other keys.
pub const SNAPSHOT_SHARD_BYTES: usize = CONFIGMAP_MAX_BYTES - 16 * 1024;

/// The most shards one persisted snapshot may take: room for half as much again as
/// [`SNAPSHOT_MAX_BYTES`] of gzip, so even a snapshot of text that does not compress (random
/// selector values and summaries) is persisted. A larger one is not persisted, and the spoke
/// says so (metric, Event, readiness, the cluster's status at the hub).
pub const SNAPSHOT_MAX_SHARDS: usize = 25;

/// The largest snapshot JSON the spoke persists and reads back (decompressed): a persisted
/// snapshot claiming more is refused unread. The JSON of a snapshot is at most about three
/// times its encoding (timestamps as text); the rest is room for the Gate objects made in the
/// cluster that the spoke enforces beside the hub's gates.
pub const SNAPSHOT_PERSISTED_MAX_JSON_BYTES: usize = 8 * SNAPSHOT_MAX_BYTES;

const _: () = assert!(
    SNAPSHOT_MAX_SHARDS * SNAPSHOT_SHARD_BYTES >= SNAPSHOT_MAX_BYTES + SNAPSHOT_MAX_BYTES / 2
);
const _: () = assert!(SNAPSHOT_SHARD_BYTES < CONFIGMAP_MAX_BYTES);
