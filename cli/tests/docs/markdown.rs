//! The docs as a Markdown reader sees them (pulldown-cmark, GitHub's
//! extensions): each file's heading anchors by GitHub's slug rules, its
//! links, its inline code spans and its code blocks, each with its line.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// One Markdown file of the docs.
pub struct Doc {
    /// Relative to the repository root (`README.md`, `docs/cli.md`).
    pub path: PathBuf,
    pub text: String,
    pub anchors: HashSet<String>,
    pub links: Vec<Located>,
    pub spans: Vec<Located>,
    pub blocks: Vec<Block>,
}

/// A link target or an inline code span, the line it is on and the heading
/// it is under.
pub struct Located {
    pub line: usize,
    pub text: String,
    pub section: String,
}

/// A fenced or indented code block.
pub struct Block {
    pub line: usize,
    pub lang: String,
    pub code: String,
}

impl Doc {
    pub fn at(&self, line: usize) -> String {
        format!("{}:{line}", self.path.display())
    }
}

/// README.md and every `docs/*.md`, parsed.
pub fn load(root: &Path) -> Vec<Doc> {
    let mut paths = vec![PathBuf::from("README.md")];
    let mut guides: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| p.strip_prefix(root).expect("under root").to_path_buf())
        .collect();
    guides.sort();
    paths.extend(guides);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(root.join(&path)).expect("readable doc");
            parse(path, text)
        })
        .collect()
}

/// GitHub's heading anchor: lower case, punctuation other than `-` and `_`
/// dropped, each space a `-` (so `a (b)` is `a-b` and `x → y` is `x--y`).
pub fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn parse(path: PathBuf, text: String) -> Doc {
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut doc = Doc {
        path,
        anchors: HashSet::new(),
        links: Vec::new(),
        spans: Vec::new(),
        blocks: Vec::new(),
        text: String::new(),
    };
    let mut heading: Option<String> = None;
    let mut section = String::new();
    let mut block: Option<Block> = None;
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for (event, range) in Parser::new_ext(&text, options).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => {
                section = heading.take().unwrap_or_default();
                let base = slug(&section);
                // GitHub numbers repeated anchors: x, x-1, x-2, ...
                let mut anchor = base.clone();
                let mut n = 0;
                while doc.anchors.contains(&anchor) {
                    n += 1;
                    anchor = format!("{base}-{n}");
                }
                doc.anchors.insert(anchor);
            }
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => doc.links.push(Located {
                line: line_of(range.start),
                text: dest_url.to_string(),
                section: section.clone(),
            }),
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => l.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                block = Some(Block {
                    line: line_of(range.start),
                    lang,
                    code: String::new(),
                });
            }
            Event::End(TagEnd::CodeBlock) => doc.blocks.extend(block.take()),
            Event::Text(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                } else if let Some(b) = block.as_mut() {
                    b.code.push_str(&t);
                }
            }
            Event::Code(c) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&c);
                }
                doc.spans.push(Located {
                    line: line_of(range.start),
                    text: c.to_string(),
                    section: section.clone(),
                });
            }
            _ => {}
        }
    }
    doc.text = text;
    doc
}
