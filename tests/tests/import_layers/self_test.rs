//! The checker on tiny fake crates: a circle is reported with its files, an upward import is
//! reported, a clean tree passes, and the path forms it reads resolve to the right files.

use std::path::Path;

use crate::{check, crate_faults, graph};

/// Writes `files` (path relative to the crate, text) into a fresh directory.
fn fake_crate(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().expect("a file has a directory")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    dir
}

/// Every edge as `from -> to`.
fn edges(dir: &Path) -> Vec<String> {
    let g = graph::read_crate(dir).expect("reads");
    let mut out = Vec::new();
    for (from, targets) in &g.edges {
        for to in targets.keys() {
            out.push(format!("{} -> {}", g.files[*from], g.files[*to]));
        }
    }
    out
}

#[test]
fn a_circle_is_reported_naming_its_files() {
    let dir = fake_crate(&[
        ("src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("src/a.rs", "use crate::b::B;\npub struct A(B);\n"),
        (
            "src/b.rs",
            "pub struct B;\nfn f() -> crate::c::C { todo!() }\n",
        ),
        (
            "src/c.rs",
            "use super::a::A;\npub struct C(Option<Box<A>>);\n",
        ),
    ]);
    let (faults, circles) = crate_faults(dir.path(), None);
    assert_eq!(circles, 1, "{faults:?}");
    let text = faults.join("\n");
    for file in ["src/a.rs", "src/b.rs", "src/c.rs"] {
        assert!(text.contains(file), "{text}");
    }
    assert!(
        text.contains("src/c.rs -> src/a.rs  (super::a::A)"),
        "{text}"
    );
    assert!(
        !text.contains("src/lib.rs"),
        "mod declarations are not imports: {text}"
    );
}

#[test]
fn an_upward_import_is_reported_and_a_clean_tree_passes() {
    let files = [
        ("src/lib.rs", "pub mod store;\npub mod handlers;\n"),
        ("src/store.rs", "pub struct Row;\n"),
        ("src/handlers/mod.rs", "mod list;\npub use list::list;\n"),
        (
            "src/handlers/list.rs",
            "use crate::store::Row;\npub fn list() -> Vec<Row> { Vec::new() }\n",
        ),
    ];
    let layers: check::Layers = &[&["src/store.rs"], &["src/handlers/"], &["src/lib.rs"]];
    let clean = fake_crate(&files);
    let (faults, circles) = crate_faults(clean.path(), Some(layers));
    assert_eq!((faults, circles), (Vec::<String>::new(), 0));

    let mut upward = files.to_vec();
    upward[1] = (
        "src/store.rs",
        "pub struct Row;\npub fn all() { crate::handlers::list(); }\n",
    );
    upward[3] = ("src/handlers/list.rs", "pub fn list() {}\n");
    let dir = fake_crate(&upward);
    let (faults, _) = crate_faults(dir.path(), Some(layers));
    assert_eq!(
        faults,
        vec![
            "upward import: src/store.rs (layer 0) -> src/handlers/list.rs (layer 1)  \
             (crate::handlers::list)"
                .to_string()
        ],
        "the re-export in handlers/mod.rs is followed to the file that defines `list`"
    );
}

#[test]
fn a_file_in_no_layer_and_a_stale_layer_entry_are_reported() {
    let dir = fake_crate(&[("src/lib.rs", "mod a;\n"), ("src/a.rs", "")]);
    let layers: check::Layers = &[&["src/gone.rs"], &["src/lib.rs"]];
    let (faults, _) = crate_faults(dir.path(), Some(layers));
    assert_eq!(
        faults,
        vec![
            "layer entry `src/gone.rs` matches no file".to_string(),
            "src/a.rs is in no layer".to_string(),
        ]
    );
}

#[test]
fn path_forms_resolve_to_the_files_they_name() {
    let dir = fake_crate(&[
        (
            "src/lib.rs",
            "mod top;\nmod x;\nmod y;\nmod z;\nmod w;\nmod v;\nmod u;\n\
             #[cfg(test)]\nmod tests;\n",
        ),
        // A group with nested groups, `self` and a rename.
        (
            "src/top.rs",
            "use crate::{x::{self, X}, y::Y as Why};\nfn f(_: X, _: Why) { let _ = x::X; }\n",
        ),
        ("src/x.rs", "pub struct X;\n"),
        ("src/y.rs", "pub struct Y;\n"),
        // A path in code and one inside a macro; an inline module belongs to its file.
        (
            "src/z.rs",
            "mod inner {\n    pub fn g() { let _ = super::super::y::Y; }\n}\n\
             fn f() { println!(\"{:?}\", crate::x::X); }\n",
        ),
        // `mod.rs` layout, a child used by a relative path, and a `#[cfg(test)]` import skipped.
        (
            "src/w/mod.rs",
            "mod leaf;\npub fn f() { leaf::g(); }\n#[cfg(test)]\nuse crate::v::V;\n",
        ),
        ("src/w/leaf.rs", "pub fn g() {}\n"),
        ("src/v.rs", "pub struct V;\n"),
        // `pub(in crate::x)` says who may see; it imports nothing.
        ("src/u.rs", "pub(in crate) struct U;\n"),
        ("src/tests.rs", "use crate::top;\n"),
    ]);
    assert_eq!(
        edges(dir.path()),
        vec![
            "src/top.rs -> src/x.rs",
            "src/top.rs -> src/y.rs",
            "src/z.rs -> src/x.rs",
            "src/z.rs -> src/y.rs",
            "src/w/mod.rs -> src/w/leaf.rs",
        ]
    );
}
