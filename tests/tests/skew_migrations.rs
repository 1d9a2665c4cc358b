//! Migrations expand, then contract (docs/hub-operations.md, "Upgrades and
//! version skew"): during a rolling update replicas of the previous release run
//! on the schema today's migrations made, so no migration since that release
//! may drop or rename a table or column it reads, change a column's type,
//! make a column NOT NULL, or add a NOT NULL column without a default to a
//! table it inserts into. Checked on a real PostgreSQL: the release's own
//! migrations (its files at its commit) applied, the schema read from
//! `information_schema`, today's migrations applied on top (sqlx refuses if a
//! released migration was edited), the schema read again and compared.

use std::collections::BTreeMap;
use std::path::Path;

use fleetgate_api_types::version::{self, Release};
use fleetgate_tests::{release_source, test_db};
use sqlx::PgPool;
use sqlx::migrate::Migrator;

/// A column as `information_schema.columns` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Column {
    /// `data_type`, with the element type of arrays and user-defined types (`udt_name`).
    data_type: String,
    nullable: bool,
    /// A default, identity or generated value: an insert that leaves it out works.
    has_default: bool,
}

/// Table → column → its description (the `public` schema, without sqlx's table).
type Schema = BTreeMap<String, BTreeMap<String, Column>>;

/// One row of `information_schema.columns`.
#[derive(sqlx::FromRow)]
struct Row {
    table_name: String,
    column_name: String,
    data_type: String,
    udt_name: String,
    is_nullable: String,
    column_default: Option<String>,
    is_identity: String,
    is_generated: String,
}

async fn schema(pool: &PgPool) -> Schema {
    let rows: Vec<Row> = sqlx::query_as(
        "select table_name::text as table_name, column_name::text as column_name, \
         data_type::text as data_type, udt_name::text as udt_name, \
         is_nullable::text as is_nullable, column_default::text as column_default, \
         is_identity::text as is_identity, is_generated::text as is_generated \
         from information_schema.columns \
         where table_schema = current_schema() and table_name <> '_sqlx_migrations'",
    )
    .fetch_all(pool)
    .await
    .expect("reading information_schema.columns");
    let mut out = Schema::new();
    for r in rows {
        out.entry(r.table_name).or_default().insert(
            r.column_name,
            Column {
                data_type: format!("{} ({})", r.data_type, r.udt_name),
                nullable: r.is_nullable == "YES",
                has_default: r.column_default.is_some()
                    || r.is_identity == "YES"
                    || r.is_generated != "NEVER",
            },
        );
    }
    out
}

/// What a replica of the release that made `old` would trip over in `new`.
fn contractions(old: &Schema, new: &Schema) -> Vec<String> {
    let mut out = Vec::new();
    for (table, old_cols) in old {
        let Some(new_cols) = new.get(table) else {
            out.push(format!("table {table} dropped or renamed"));
            continue;
        };
        for (name, old_c) in old_cols {
            match new_cols.get(name) {
                None => out.push(format!("column {table}.{name} dropped or renamed")),
                Some(new_c) => {
                    if new_c.data_type != old_c.data_type {
                        out.push(format!(
                            "column {table}.{name} changed type from {} to {}",
                            old_c.data_type, new_c.data_type
                        ));
                    }
                    if old_c.nullable && !new_c.nullable && !new_c.has_default {
                        out.push(format!(
                            "column {table}.{name} became NOT NULL without a default"
                        ));
                    }
                }
            }
        }
        for (name, new_c) in new_cols {
            if !old_cols.contains_key(name) && !new_c.nullable && !new_c.has_default {
                out.push(format!(
                    "column {table}.{name} added NOT NULL without a default: \
                     the previous release's inserts fail"
                ));
            }
        }
    }
    out
}

/// The schema of `release`'s migrations and the one of today's on top.
async fn old_and_new(release: &Release, pool: &PgPool) -> (Schema, Schema) {
    let src = release_source(release);
    Migrator::new(src.join("migrations"))
        .await
        .expect("the release's migrations")
        .run(pool)
        .await
        .expect("applying the release's migrations");
    let old = schema(pool).await;
    let today = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
    Migrator::new(today)
        .await
        .expect("today's migrations")
        .run(pool)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "applying today's migrations on {}'s schema: {e} \
                 (a released migration must never be edited)",
                release.version
            )
        });
    (old, schema(pool).await)
}

#[tokio::test]
async fn todays_migrations_only_expand_the_previous_releases_schema() {
    let release = version::previous_release().expect("a previous release is recorded");
    let db = test_db().await;
    let pool = PgPool::connect(&db.url).await.expect("connecting");
    let (old, new) = old_and_new(release, &pool).await;
    assert!(
        old.contains_key("clusters") && old.contains_key("gates"),
        "{old:?}"
    );
    let found = contractions(&old, &new);
    assert!(
        found.is_empty(),
        "migrations since {} ({}) contract what it still reads; add now, drop a release later:\n  {}",
        release.version,
        release.commit,
        found.join("\n  ")
    );
}

/// The check sees a contracting migration: one applied after today's drops a
/// column, renames one, changes a type and adds a NOT NULL column.
#[tokio::test]
async fn a_contracting_migration_is_reported() {
    let release = version::previous_release().expect("a previous release is recorded");
    let db = test_db().await;
    let pool = PgPool::connect(&db.url).await.expect("connecting");
    let (old, _) = old_and_new(release, &pool).await;
    sqlx::raw_sql(
        "alter table clusters drop column labels cascade; \
         alter table gates rename column name to gate_name; \
         alter table audit_log alter column reason type varchar(200); \
         alter table overrides add column ticket text not null; \
         alter table overrides add column note text not null default ''; \
         drop table api_tokens cascade",
    )
    .execute(&pool)
    .await
    .expect("the contracting migration");
    let found = contractions(&old, &schema(&pool).await);
    assert_eq!(
        found,
        [
            "table api_tokens dropped or renamed",
            "column audit_log.reason changed type from text (text) to character varying (varchar)",
            "column clusters.labels dropped or renamed",
            "column gates.name dropped or renamed",
            "column gates.gate_name added NOT NULL without a default: the previous release's inserts fail",
            "column overrides.ticket added NOT NULL without a default: the previous release's inserts fail",
        ]
    );
}

/// The other half of a rolling update (and of a roll-back): a replica of this
/// release starting on a database a newer release migrated further. sqlx
/// refuses migrations it does not know unless told otherwise (a 0.1.0 hub
/// does refuse); this release's hub starts.
#[tokio::test]
async fn todays_hub_starts_on_the_schema_of_a_newer_release() {
    let hub = fleetgate_tests::bin_path("fleetgate-hub");
    let db = test_db().await;
    let migrate = || {
        let mut cmd = std::process::Command::new(&hub);
        cmd.arg("migrate")
            .env("DATABASE_URL", &db.url)
            .env("RUST_LOG", "warn");
        fleetgate_tests::output(cmd, "fleetgate-hub migrate")
    };
    let out = migrate().await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What a newer release's first migration leaves behind.
    let pool = PgPool::connect(&db.url).await.expect("connecting");
    sqlx::raw_sql(
        "alter table clusters add column next_release_note text; \
         insert into _sqlx_migrations (version, description, success, checksum, execution_time) \
         values (99999, 'a newer release', true, '\\x00', 1)",
    )
    .execute(&pool)
    .await
    .expect("a newer release's migration");
    let out = migrate().await;
    assert!(
        out.status.success(),
        "today's hub refuses a schema a newer release migrated: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn nullable_additions_and_defaults_are_expansions() {
    let col = |data_type: &str, nullable, has_default| Column {
        data_type: data_type.into(),
        nullable,
        has_default,
    };
    let old: Schema = [(
        "t".to_owned(),
        [("a".to_owned(), col("text", true, false))].into(),
    )]
    .into();
    let mut new = old.clone();
    let t = new.get_mut("t").unwrap();
    t.insert("b".into(), col("text", true, false));
    t.insert("c".into(), col("bigint", false, true));
    new.insert(
        "u".into(),
        [("x".to_owned(), col("text", false, false))].into(),
    );
    assert_eq!(contractions(&old, &new), Vec::<String>::new());
    new.get_mut("t")
        .unwrap()
        .insert("a".into(), col("text", false, false));
    assert_eq!(
        contractions(&old, &new),
        ["column t.a became NOT NULL without a default"]
    );
}
