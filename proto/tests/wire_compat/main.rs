//! The wire contract never breaks against a release the hub still supports:
//! today's `.proto` files (compiled with protox) are compared with the
//! descriptor set kept for each supported release in `proto/released/`
//! (made from the release's commit, see docs/development.md "Releases"), as
//! `buf breaking` does. The checker's own rules are tested on small protos.

mod checker;

use std::path::{Path, PathBuf};

use checker::{Breaking, breaking_changes};
use fleetgate_api_types::version::{self, RELEASES, Skew};
use prost::Message;
use prost_types::FileDescriptorSet;

const PROTOS: &[&str] = &["fleetgate/v1/spoke.proto", "fleetgate/v1/admin.proto"];

fn proto_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The descriptor set of the `.proto` files under `root`, as kept for a release:
/// imports included, no source info.
fn compile(root: &Path, files: &[&str]) -> FileDescriptorSet {
    protox::Compiler::new([root])
        .expect("protox include path")
        .include_imports(true)
        .include_source_info(false)
        .open_files(files)
        .unwrap_or_else(|e| panic!("compiling {files:?} under {}: {e}", root.display()))
        .file_descriptor_set()
}

fn released(version: &str) -> FileDescriptorSet {
    let path = proto_root().join(format!("released/{version}.binpb"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (every release keeps its descriptor set)",
            path.display()
        )
    });
    FileDescriptorSet::decode(bytes.as_slice()).expect("a FileDescriptorSet")
}

#[test]
fn todays_protos_keep_the_wire_of_every_supported_release() {
    let today = compile(&proto_root(), PROTOS);
    let supported: Vec<_> = RELEASES
        .iter()
        .filter(|r| version::spoke_skew(version::VERSION, r.version) == Skew::Supported)
        .collect();
    assert!(
        !supported.is_empty() || RELEASES.is_empty(),
        "no release within the skew policy of {}",
        version::VERSION
    );
    for release in supported {
        let broken = breaking_changes(&released(release.version), &today);
        assert!(
            broken.is_empty(),
            "breaking changes against {} (append fields, messages and RPCs instead; \
             reserve what you remove):\n{}",
            release.version,
            broken
                .iter()
                .map(|b| format!("  {b}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// The kept set is what the release's commit compiles to: nobody regenerated
/// it from later files (which would hide a break).
#[test]
fn each_kept_set_is_its_release_commits_protos() {
    let root = proto_root().join("..");
    for release in RELEASES {
        let dir = tempfile::tempdir().unwrap();
        for file in PROTOS {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(&root)
                .args(["show", &format!("{}:proto/{file}", release.commit)])
                .output()
                .expect("running git");
            if !out.status.success() {
                // A checkout without the release's history (a shallow clone) cannot check this.
                eprintln!(
                    "skipped: {}:{file} not in this clone's history: {}",
                    release.commit,
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                return;
            }
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, out.stdout).unwrap();
        }
        let from_commit = compile(dir.path(), PROTOS);
        assert!(
            from_commit == released(release.version),
            "proto/released/{}.binpb is not what commit {} compiles to",
            release.version,
            release.commit
        );
    }
}

/// Compiles one `test.proto` with the given body (package `t`).
fn set(body: &str) -> FileDescriptorSet {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("test.proto"),
        format!("syntax = \"proto3\";\npackage t;\n{body}"),
    )
    .unwrap();
    compile(dir.path(), &["test.proto"])
}

fn changes(old: &str, new: &str) -> Vec<String> {
    breaking_changes(&set(old), &set(new))
        .iter()
        .map(Breaking::to_string)
        .collect()
}

const BASE: &str = r#"
message Hello { string cluster = 1; uint64 revision = 3; repeated string gates = 4;
  oneof kind { string a = 5; string b = 6; } }
message Ack { bool ok = 1; }
enum Mode { MODE_UNSPECIFIED = 0; MODE_SUSPEND = 1; MODE_FREEZE = 2; }
service S { rpc Connect(stream Hello) returns (stream Ack); rpc Get(Hello) returns (Ack); }
"#;

#[test]
fn appending_is_not_breaking() {
    let appended = BASE
        .replace(
            "repeated string gates = 4;",
            "repeated string gates = 4; optional string version = 7;",
        )
        .replace("MODE_FREEZE = 2;", "MODE_FREEZE = 2; MODE_HOLD = 3;")
        .replace(
            "rpc Get(Hello) returns (Ack); }",
            "rpc Get(Hello) returns (Ack); rpc Version(Ack) returns (Ack); }\nmessage New {}",
        );
    assert_eq!(changes(BASE, &appended), Vec::<String>::new());
    assert_eq!(changes(BASE, BASE), Vec::<String>::new());
}

#[test]
fn a_removed_field_is_reported_unless_its_number_is_reserved() {
    let removed = BASE.replace("uint64 revision = 3;", "");
    assert_eq!(
        changes(BASE, &removed),
        ["t.Hello.revision: field 3 removed (reserve its number instead)"]
    );
    let reserved = BASE.replace("uint64 revision = 3;", "reserved 3; reserved \"revision\";");
    assert_eq!(changes(BASE, &reserved), Vec::<String>::new());
    // and a later release may not use the reserved number again
    let reused = reserved.replace("reserved 3;", "reserved 8; int64 other = 3;");
    assert_eq!(
        changes(&reserved, &reused),
        ["t.Hello.other: field 3 reuses a reserved number"]
    );
}

#[test]
fn a_renumbered_or_renamed_field_is_reported() {
    let renumbered = BASE.replace("uint64 revision = 3;", "uint64 revision = 8;");
    assert_eq!(
        changes(BASE, &renumbered),
        ["t.Hello.revision: field 3 removed (reserve its number instead)"]
    );
    let renamed = BASE.replace("uint64 revision = 3;", "uint64 rev = 3;");
    assert_eq!(
        changes(BASE, &renamed),
        [
            "t.Hello.revision: field 3 JSON name changed from `revision` to `rev`",
            "t.Hello.revision: field 3 renamed to `rev`",
        ]
    );
}

#[test]
fn a_changed_type_label_or_oneof_is_reported() {
    let retyped = BASE.replace("uint64 revision = 3;", "int64 revision = 3;");
    assert_eq!(
        changes(BASE, &retyped),
        ["t.Hello.revision: field 3 type changed from TYPE_UINT64 to TYPE_INT64"]
    );
    let message_type = BASE.replace("uint64 revision = 3;", "Ack revision = 3;");
    assert_eq!(
        changes(BASE, &message_type),
        ["t.Hello.revision: field 3 type changed from TYPE_UINT64 to TYPE_MESSAGE .t.Ack"]
    );
    let relabelled = BASE.replace("repeated string gates = 4;", "string gates = 4;");
    assert_eq!(
        changes(BASE, &relabelled),
        ["t.Hello.gates: field 4 label changed from repeated to singular"]
    );
    let out_of_oneof = BASE.replace(
        "oneof kind { string a = 5; string b = 6; }",
        "string a = 5; oneof kind { string b = 6; }",
    );
    assert_eq!(
        changes(BASE, &out_of_oneof),
        ["t.Hello.a: field 5 moved from oneof kind to oneof (none)"]
    );
    // proto3 `optional` adds presence only: the same on the wire
    let optional = BASE.replace("uint64 revision = 3;", "optional uint64 revision = 3;");
    assert_eq!(changes(BASE, &optional), Vec::<String>::new());
}

#[test]
fn removed_messages_enum_values_and_rpcs_are_reported() {
    let no_message = format!(
        "{}\nmessage Other {{}}",
        BASE.replace(
            "message Ack { bool ok = 1; }",
            "message Ack2 { bool ok = 1; }"
        )
        .replace("returns (Ack)", "returns (Ack2)")
        .replace("returns (stream Ack)", "returns (stream Ack2)")
    );
    assert_eq!(
        changes(BASE, &no_message),
        [
            "t.Ack: message removed",
            "t.S.Connect: response type changed from .t.Ack to .t.Ack2",
            "t.S.Get: response type changed from .t.Ack to .t.Ack2",
        ]
    );
    let no_value = BASE.replace("MODE_FREEZE = 2;", "");
    assert_eq!(
        changes(BASE, &no_value),
        ["t.Mode.MODE_FREEZE: enum value 2 removed (reserve its number instead)"]
    );
    let reserved_value = BASE.replace("MODE_FREEZE = 2;", "reserved 2;");
    assert_eq!(changes(BASE, &reserved_value), Vec::<String>::new());
    let renamed_value = BASE.replace("MODE_FREEZE = 2;", "MODE_FREEZE_SOURCES = 2;");
    assert_eq!(
        changes(BASE, &renamed_value),
        ["t.Mode.MODE_FREEZE: enum value 2 renamed to `MODE_FREEZE_SOURCES`"]
    );
    let no_rpc = BASE.replace("rpc Get(Hello) returns (Ack);", "");
    assert_eq!(changes(BASE, &no_rpc), ["t.S.Get: rpc removed"]);
}

#[test]
fn changed_streaming_and_request_types_are_reported() {
    let unary = BASE.replace(
        "rpc Connect(stream Hello) returns (stream Ack);",
        "rpc Connect(Hello) returns (stream Ack);",
    );
    assert_eq!(
        changes(BASE, &unary),
        ["t.S.Connect: client streaming changed"]
    );
    let request = BASE.replace("rpc Get(Hello)", "rpc Get(Ack)");
    assert_eq!(
        changes(BASE, &request),
        ["t.S.Get: request type changed from .t.Hello to .t.Ack"]
    );
}
