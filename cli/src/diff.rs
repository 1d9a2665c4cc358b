//! A minimal line diff (longest common subsequence) rendered as a unified
//! diff with context — gate manifests are small, so O(n·m) is fine.

/// Unified diff of two texts, or None when they are equal.
pub fn unified(old_name: &str, new_name: &str, old: &str, new: &str) -> Option<String> {
    if old == new {
        return None;
    }
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = ops(&a, &b);
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    const CONTEXT: usize = 3;
    // Group changes into hunks separated by more than 2*CONTEXT equal lines.
    let changed: Vec<usize> = (0..ops.len())
        .filter(|&i| !matches!(ops[i], Op::Same(_)))
        .collect();
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(CONTEXT);
        let mut end = changed[i];
        while i + 1 < changed.len() && changed[i + 1] - end <= 2 * CONTEXT {
            i += 1;
            end = changed[i];
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let (mut a_line, mut b_line) = (1, 1);
        for op in &ops[..start] {
            match op {
                Op::Same(_) => {
                    a_line += 1;
                    b_line += 1;
                }
                Op::Del(_) => a_line += 1,
                Op::Add(_) => b_line += 1,
            }
        }
        let a_len = ops[start..end]
            .iter()
            .filter(|o| !matches!(o, Op::Add(_)))
            .count();
        let b_len = ops[start..end]
            .iter()
            .filter(|o| !matches!(o, Op::Del(_)))
            .count();
        // Unified-diff convention: an empty side names the line before it.
        let a_at = if a_len == 0 { a_line - 1 } else { a_line };
        let b_at = if b_len == 0 { b_line - 1 } else { b_line };
        out.push_str(&format!("@@ -{a_at},{a_len} +{b_at},{b_len} @@\n"));
        for op in &ops[start..end] {
            let (sign, line) = match op {
                Op::Same(l) => (' ', l),
                Op::Del(l) => ('-', l),
                Op::Add(l) => ('+', l),
            };
            out.push(sign);
            out.push_str(line);
            out.push('\n');
        }
        i += 1;
    }
    Some(out)
}

#[derive(Debug)]
enum Op<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

fn ops<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let (n, m) = (a.len(), b.len());
    // lcs[i][j] = LCS length of a[i..] and b[j..]
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(n + m);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            out.push(Op::Same(a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            // Deletions before additions, as diff(1) prints them.
            out.push(Op::Del(a[i]));
            i += 1;
        } else {
            out.push(Op::Add(b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_have_no_diff() {
        assert_eq!(unified("a", "b", "x\ny\n", "x\ny\n"), None);
    }

    #[test]
    fn shows_changed_line_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let d = unified("hub", "file", old, new).unwrap();
        assert_eq!(
            d,
            "--- hub\n+++ file\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
    }

    #[test]
    fn added_file_is_all_plus() {
        let d = unified("hub", "file", "", "x\n").unwrap();
        assert!(d.ends_with("@@ -0,0 +1,1 @@\n+x\n"), "{d}");
    }
}
