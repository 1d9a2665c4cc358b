//! The two rules over a crate's file graph: no circle of files importing each other (Tarjan's
//! strongly connected components), and no import from a file to a file in a higher layer.

use std::collections::BTreeMap;

use crate::graph::Graph;

/// The files of every circle (strongly connected component of more than one file), each sorted,
/// with the imports that close it.
pub fn circles(g: &Graph) -> Vec<Vec<usize>> {
    let n = g.files.len();
    let mut t = Tarjan {
        g,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            t.connect(v);
        }
    }
    let mut out: Vec<Vec<usize>> = t.out.into_iter().filter(|c| c.len() > 1).collect();
    for c in &mut out {
        c.sort_by(|a, b| g.files[*a].cmp(&g.files[*b]));
    }
    out.sort_by(|a, b| g.files[a[0]].cmp(&g.files[b[0]]));
    out
}

struct Tarjan<'a> {
    g: &'a Graph,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    out: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn connect(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        let targets: Vec<usize> = self
            .g
            .edges
            .get(&v)
            .map(|m| m.keys().copied().collect())
            .unwrap_or_default();
        for w in targets {
            match self.index[w] {
                None => {
                    self.connect(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            loop {
                let w = self.stack.pop().expect("v is on the stack");
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.out.push(component);
        }
    }
}

/// Describes a circle for a person: its files, then each import inside it.
pub fn describe_circle(g: &Graph, circle: &[usize]) -> String {
    let mut s = format!("circle of {} files:", circle.len());
    for &f in circle {
        s.push_str(&format!("\n      {}", g.files[f]));
    }
    s.push_str("\n    imports inside it:");
    for &f in circle {
        for (to, example) in g.edges.get(&f).into_iter().flatten() {
            if circle.contains(to) {
                s.push_str(&format!(
                    "\n      {} -> {}  ({example})",
                    g.files[f], g.files[*to]
                ));
            }
        }
    }
    s
}

/// Layers of one crate, lowest first; each a list of path prefixes relative to the crate's
/// directory (`src/commands/`, `src/args.rs`). A file's layer is the one with its longest
/// matching prefix.
pub type Layers<'a> = &'a [&'a [&'a str]];

/// Every import from a lower layer up into a higher one, every file no layer holds, and every
/// declared prefix that matches no file (so the table follows renames).
pub fn layer_faults(g: &Graph, layers: Layers) -> Vec<String> {
    let mut faults = Vec::new();
    let layer_of = |file: &str| -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for (i, layer) in layers.iter().enumerate() {
            for prefix in *layer {
                if file.starts_with(prefix) && best.is_none_or(|(len, _)| prefix.len() > len) {
                    best = Some((prefix.len(), i));
                }
            }
        }
        best.map(|(_, i)| i)
    };
    for layer in layers {
        for prefix in *layer {
            if !g.files.iter().any(|f| f.starts_with(prefix)) {
                faults.push(format!("layer entry `{prefix}` matches no file"));
            }
        }
    }
    let mut levels = BTreeMap::new();
    for (i, f) in g.files.iter().enumerate() {
        match layer_of(f) {
            Some(l) => {
                levels.insert(i, l);
            }
            None => faults.push(format!("{f} is in no layer")),
        }
    }
    for (from, targets) in &g.edges {
        for (to, example) in targets {
            if let (Some(lf), Some(lt)) = (levels.get(from), levels.get(to))
                && lt > lf
            {
                faults.push(format!(
                    "upward import: {} (layer {lf}) -> {} (layer {lt})  ({example})",
                    g.files[*from], g.files[*to]
                ));
            }
        }
    }
    faults
}
