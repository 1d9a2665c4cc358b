//! The file-level import graph of one crate, read with `syn`: the module tree from `mod`
//! declarations (a declaration is not an import), edges from `use` items (`pub use` included),
//! from paths in code and from paths inside macro invocations. Inline `mod x { }` blocks belong
//! to their file; items under `#[cfg(test)]` are not read.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::visit::Visit;

/// One crate's source files (paths relative to the crate's directory, `/`-separated) and the
/// imports between them: `edges[from][to]` is one import of `to` written in `from`, as written.
pub struct Graph {
    pub files: Vec<String>,
    pub edges: BTreeMap<usize, BTreeMap<usize, String>>,
}

struct Module {
    file: usize,
    parent: Option<usize>,
    children: HashMap<String, usize>,
    /// Names of the items this module defines (other than modules).
    items: HashSet<String>,
    /// Names brought in by `use`, with the path they stand for (relative to this module).
    uses: HashMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
}

/// A path written in a module, to be resolved to the file of the module it names.
struct Reference {
    module: usize,
    segments: Vec<String>,
}

enum Resolved {
    /// The name is defined (or re-exported through a name defined) in this file.
    Found(usize),
    /// The path reached this file's module, and the rest is not a name it knows (an enum
    /// variant, an associated item, something a macro defines).
    Reached(usize),
}

#[derive(Default)]
struct Builder {
    dir: PathBuf,
    files: Vec<String>,
    asts: Vec<Option<syn::File>>,
    modules: Vec<Module>,
    /// The module each file's top level is.
    file_module: Vec<usize>,
}

/// Reads the crate in `dir` from its library and binary roots under `src/` (`lib.rs`,
/// `main.rs`, `bin/*.rs`, `bin/*/main.rs`). Integration tests and benches are crates of their
/// own that import the library by name, so they are not read.
pub fn read_crate(dir: &Path) -> Result<Graph, String> {
    let mut b = Builder {
        dir: dir.to_path_buf(),
        ..Builder::default()
    };
    let mut roots = Vec::new();
    for root in ["src/lib.rs", "src/main.rs"] {
        if dir.join(root).is_file() {
            roots.push(root.to_string());
        }
    }
    if let Ok(entries) = std::fs::read_dir(dir.join("src/bin")) {
        let mut bins: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.ends_with(".rs") {
                    Some(format!("src/bin/{name}"))
                } else if e.path().join("main.rs").is_file() {
                    Some(format!("src/bin/{name}/main.rs"))
                } else {
                    None
                }
            })
            .collect();
        bins.sort();
        roots.extend(bins);
    }
    for root in &roots {
        let parent = Path::new(root).parent().expect("a root has a directory");
        b.add_file(root, None, parent.to_path_buf())?;
    }
    let mut refs = Vec::new();
    for file in 0..b.asts.len() {
        let mut v = Collector {
            modules: &b.modules,
            stack: vec![b.file_module[file]],
            refs: &mut refs,
        };
        v.visit_file(b.asts[file].as_ref().expect("every file was parsed"));
    }
    let mut edges: BTreeMap<usize, BTreeMap<usize, String>> = BTreeMap::new();
    for r in &refs {
        let from = b.modules[r.module].file;
        let to = match b.resolve(r.module, &r.segments, 0) {
            Some(Resolved::Found(f) | Resolved::Reached(f)) => f,
            None => continue,
        };
        if to != from {
            edges
                .entry(from)
                .or_default()
                .entry(to)
                .or_insert_with(|| r.segments.join("::"));
        }
    }
    Ok(Graph {
        files: b.files,
        edges,
    })
}

impl Builder {
    /// Parses `rel` (a module file) and its `mod` declarations, depth first. `child_dir` is where
    /// its `mod x;` files live (`rel`'s own directory for `lib.rs`, `main.rs`, `mod.rs`).
    fn add_file(
        &mut self,
        rel: &str,
        parent: Option<usize>,
        child_dir: PathBuf,
    ) -> Result<usize, String> {
        let text = std::fs::read_to_string(self.dir.join(rel))
            .map_err(|e| format!("{}: {e}", self.dir.join(rel).display()))?;
        let ast = syn::parse_file(&text).map_err(|e| format!("{rel}: does not parse: {e}"))?;
        let file = self.files.len();
        self.files.push(rel.to_string());
        self.file_module.push(usize::MAX);
        // Files are numbered in the order they are found; their syntax is kept in that order.
        self.asts.push(None);
        let module = self.add_module(file, rel, &ast.items, parent, child_dir)?;
        self.file_module[file] = module;
        self.asts[file] = Some(ast);
        Ok(module)
    }

    fn add_module(
        &mut self,
        file: usize,
        rel: &str,
        items: &[syn::Item],
        parent: Option<usize>,
        child_dir: PathBuf,
    ) -> Result<usize, String> {
        let id = self.modules.len();
        self.modules.push(Module {
            file,
            parent,
            children: HashMap::new(),
            items: HashSet::new(),
            uses: HashMap::new(),
            globs: Vec::new(),
        });
        for item in items {
            if is_test_only(item) {
                continue;
            }
            let name = match item {
                syn::Item::Mod(m) => {
                    let name = m.ident.to_string();
                    let child = if let Some((_, content)) = &m.content {
                        Some(self.add_module(
                            file,
                            rel,
                            content,
                            Some(id),
                            child_dir.join(&name),
                        )?)
                    } else {
                        self.add_mod_file(m, rel, id, &child_dir)?
                    };
                    if let Some(child) = child {
                        self.modules[id].children.insert(name, child);
                    }
                    continue;
                }
                syn::Item::Use(u) => {
                    let mut leaves = Vec::new();
                    use_leaves(&u.tree, &mut Vec::new(), &mut leaves);
                    let module = &mut self.modules[id];
                    for (name, path) in leaves {
                        match name {
                            Leaf::Name(n) => {
                                module.uses.insert(n, path);
                            }
                            Leaf::Glob => module.globs.push(path),
                            Leaf::Underscore => {}
                        }
                    }
                    continue;
                }
                syn::Item::Const(i) => i.ident.to_string(),
                syn::Item::Enum(i) => i.ident.to_string(),
                syn::Item::ExternCrate(i) => i.ident.to_string(),
                syn::Item::Fn(i) => i.sig.ident.to_string(),
                syn::Item::Macro(i) => match &i.ident {
                    Some(ident) => ident.to_string(),
                    None => continue,
                },
                syn::Item::Static(i) => i.ident.to_string(),
                syn::Item::Struct(i) => i.ident.to_string(),
                syn::Item::Trait(i) => i.ident.to_string(),
                syn::Item::TraitAlias(i) => i.ident.to_string(),
                syn::Item::Type(i) => i.ident.to_string(),
                syn::Item::Union(i) => i.ident.to_string(),
                _ => continue,
            };
            self.modules[id].items.insert(name);
        }
        Ok(id)
    }

    /// `mod name;` → `child_dir/name.rs` or `child_dir/name/mod.rs`, or its `#[path]`.
    fn add_mod_file(
        &mut self,
        m: &syn::ItemMod,
        rel: &str,
        parent: usize,
        child_dir: &Path,
    ) -> Result<Option<usize>, String> {
        let name = m.ident.to_string();
        let path_attr = m.attrs.iter().find_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        });
        let (file, dir) = if let Some(p) = path_attr {
            let here = Path::new(rel).parent().expect("a file has a directory");
            let file = normalize(&here.join(p));
            let dir = Path::new(&file)
                .parent()
                .expect("a file has a directory")
                .to_path_buf();
            (file, dir)
        } else {
            let flat = child_dir.join(format!("{name}.rs"));
            let nested = child_dir.join(&name).join("mod.rs");
            if self.dir.join(&flat).is_file() {
                (slashes(&flat), child_dir.join(&name))
            } else if self.dir.join(&nested).is_file() {
                (slashes(&nested), child_dir.join(&name))
            } else if m.attrs.iter().any(|a| a.path().is_ident("cfg")) {
                // A platform's module that is not there; nothing of it to read.
                return Ok(None);
            } else {
                return Err(format!(
                    "{rel}: `mod {name};` has no file in {}",
                    slashes(child_dir)
                ));
            }
        };
        if let Some(existing) = self.files.iter().position(|f| *f == file) {
            return Ok(Some(self.file_module[existing]));
        }
        self.add_file(&file, Some(parent), dir).map(Some)
    }

    /// The file of the module a path names, from the module it is written in: `crate::`,
    /// `super::`, `self::`, or a first segment that is a child module or a name this module
    /// imports. `None` for paths that leave the crate (other crates, `std`, locals).
    fn resolve(&self, from: usize, segments: &[String], depth: usize) -> Option<Resolved> {
        if depth > 16 || segments.is_empty() {
            return None;
        }
        let mut cur = from;
        let mut rest = segments;
        match rest[0].as_str() {
            "crate" => {
                while let Some(p) = self.modules[cur].parent {
                    cur = p;
                }
                rest = &rest[1..];
            }
            "super" | "self" => {
                while let Some(first) = rest.first() {
                    match first.as_str() {
                        "super" => cur = self.modules[cur].parent?,
                        "self" => {}
                        _ => break,
                    }
                    rest = &rest[1..];
                }
            }
            first => {
                if !self.modules[cur].children.contains_key(first) {
                    let path = self.modules[cur].uses.get(first)?;
                    let whole: Vec<String> = path.iter().chain(&rest[1..]).cloned().collect();
                    return self.resolve(cur, &whole, depth + 1);
                }
            }
        }
        self.walk(cur, rest, depth)
    }

    /// Descends from module `cur` along `rest`, following `use` re-exports to where a name is
    /// defined.
    fn walk(&self, mut cur: usize, mut rest: &[String], depth: usize) -> Option<Resolved> {
        while let Some(name) = rest.first() {
            let module = &self.modules[cur];
            if name == "self" {
                rest = &rest[1..];
                continue;
            }
            if let Some(&child) = module.children.get(name.as_str()) {
                cur = child;
                rest = &rest[1..];
                continue;
            }
            if module.items.contains(name.as_str()) {
                return Some(Resolved::Found(module.file));
            }
            if let Some(path) = module.uses.get(name.as_str()) {
                let whole: Vec<String> = path.iter().chain(&rest[1..]).cloned().collect();
                return self.resolve(cur, &whole, depth + 1);
            }
            for glob in &module.globs {
                let whole: Vec<String> = glob.iter().chain(rest).cloned().collect();
                if let Some(found @ Resolved::Found(_)) = self.resolve(cur, &whole, depth + 1) {
                    return Some(found);
                }
            }
            return Some(Resolved::Reached(module.file));
        }
        Some(Resolved::Found(self.modules[cur].file))
    }
}

enum Leaf {
    Name(String),
    Glob,
    Underscore,
}

/// Flattens a `use` tree (`crate::{a::{b, c as d}, e::*}`) into its leaves and their paths.
fn use_leaves(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Leaf, Vec<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut path = prefix.clone();
            let leaf = if name == "self" {
                Leaf::Name(prefix.last().cloned().unwrap_or_default())
            } else {
                path.push(name.clone());
                Leaf::Name(name)
            };
            out.push((leaf, path));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            let leaf = if r.rename == "_" {
                Leaf::Underscore
            } else {
                Leaf::Name(r.rename.to_string())
            };
            out.push((leaf, path));
        }
        syn::UseTree::Glob(_) => out.push((Leaf::Glob, prefix.clone())),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_leaves(t, prefix, out);
            }
        }
    }
}

/// Walks one file's syntax, noting every path that may name a module of the crate, with the
/// module (inline `mod x { }` blocks included) it is written in.
struct Collector<'a> {
    modules: &'a [Module],
    stack: Vec<usize>,
    refs: &'a mut Vec<Reference>,
}

impl Collector<'_> {
    fn note(&mut self, segments: Vec<String>) {
        let module = *self.stack.last().expect("inside a module");
        self.refs.push(Reference { module, segments });
    }

    /// Paths inside macro invocations are tokens to syn: `ident (:: ident)*` runs, `$crate`
    /// included.
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Group(g) => self.scan_tokens(g.stream()),
                TokenTree::Ident(first) => {
                    let mut path = vec![first.to_string()];
                    let mut j = i + 1;
                    while let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(next)),
                    ) = (tokens.get(j), tokens.get(j + 1), tokens.get(j + 2))
                    {
                        if a.as_char() != ':' || a.spacing() != Spacing::Joint || b.as_char() != ':'
                        {
                            break;
                        }
                        path.push(next.to_string());
                        j += 3;
                    }
                    if path.len() > 1 {
                        self.note(path);
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_only(item) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let Some((_, content)) = &m.content else {
            return;
        };
        let here = *self.stack.last().expect("inside a module");
        let child = self.modules[here]
            .children
            .get(&m.ident.to_string())
            .copied();
        self.stack.push(child.unwrap_or(here));
        for item in content {
            self.visit_item(item);
        }
        self.stack.pop();
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut leaves = Vec::new();
        use_leaves(&u.tree, &mut Vec::new(), &mut leaves);
        for (_, path) in leaves {
            self.note(path);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() && p.segments.len() > 1 {
            self.note(p.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.scan_tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }

    /// `pub(in crate::a)` says who may see an item; it imports nothing.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}
}

/// Items under `#[cfg(test)]` (test modules, test helpers) are not read: a test may exercise
/// its module through the layers above it, which ships nothing.
fn is_test_only(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        _ => return false,
    };
    attrs.iter().any(|a| match &a.meta {
        syn::Meta::List(l) => l.path.is_ident("cfg") && l.tokens.to_string() == "test",
        _ => false,
    })
}

fn slashes(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// `a/b/../c.rs` → `a/c.rs`, for `#[path]` attributes.
fn normalize(p: &Path) -> String {
    let mut out: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c.as_os_str().to_string_lossy().into_owned()),
        }
    }
    out.join("/")
}
