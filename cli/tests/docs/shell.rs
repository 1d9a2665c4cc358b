//! Command lines as a shell reads them, enough for the docs' examples:
//! continuation lines joined, prompts (`$ `) and comments dropped, each
//! simple command of a pipeline or list (`|`, `&&`, `||`, `;`) on its own,
//! quotes and `$(…)` kept in one word, redirections removed.

/// One simple command: its words, with quotes removed, and the comment
/// that followed it on its line (`# NAME OPEN …`), if any.
#[derive(Debug, Clone)]
pub struct Command {
    pub words: Vec<String>,
    pub comment: Option<String>,
}

/// The simple commands of a code block, and the comment lines below each
/// command (the example output some blocks show as `# NAME OPEN …`). With
/// `prompted`, only lines after a `$ ` prompt are commands (a `text` block
/// that shows a session and its output).
pub fn commands(code: &str, prompted: bool) -> Vec<Command> {
    let mut out: Vec<Command> = Vec::new();
    let mut logical = String::new();
    for raw in code.lines() {
        let line = raw.trim_start();
        if logical.is_empty() && line.starts_with('#') {
            // An output line under the previous command.
            if let Some(last) = out.last_mut()
                && last.comment.is_none()
            {
                last.comment = Some(line.trim_start_matches('#').trim().to_string());
            }
            continue;
        }
        let line = match line.strip_prefix("$ ") {
            Some(l) => l,
            None if prompted && logical.is_empty() => continue,
            None => line,
        };
        match line.strip_suffix('\\') {
            Some(head) => {
                logical.push_str(head);
                logical.push(' ');
            }
            None => {
                logical.push_str(line);
                out.extend(split(&logical));
                logical.clear();
            }
        }
    }
    out.extend(split(&logical));
    out
}

/// The simple commands of one logical line.
pub fn split(line: &str) -> Vec<Command> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut comment = None;
    let mut chars = line.chars().peekable();
    let (mut single, mut double, mut paren) = (false, false, 0usize);
    let finish_word = |word: &mut String, words: &mut Vec<String>, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        if single {
            if c == '\'' {
                single = false;
            } else {
                word.push(c);
            }
            continue;
        }
        if paren > 0 {
            word.push(c);
            match c {
                '(' => paren += 1,
                ')' => paren -= 1,
                _ => {}
            }
            continue;
        }
        match c {
            '\'' if !double => {
                single = true;
                in_word = true;
            }
            '"' => {
                double = !double;
                in_word = true;
            }
            '$' if chars.peek() == Some(&'(') => {
                word.push('$');
                word.push(chars.next().unwrap_or('('));
                paren = 1;
                in_word = true;
            }
            c if double => word.push(c),
            '#' if !in_word => {
                comment = Some(chars.by_ref().collect::<String>().trim().to_string());
                break;
            }
            ' ' | '\t' => finish_word(&mut word, &mut words, &mut in_word),
            '|' | ';' | '&' => {
                finish_word(&mut word, &mut words, &mut in_word);
                if chars.peek() == Some(&c) {
                    chars.next();
                }
                commands.push(std::mem::take(&mut words));
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    finish_word(&mut word, &mut words, &mut in_word);
    commands.push(words);
    let mut commands: Vec<Command> = commands
        .into_iter()
        .map(|w| Command {
            words: without_redirections(w),
            comment: None,
        })
        .filter(|c| !c.words.is_empty())
        .collect();
    if let Some(last) = commands.last_mut() {
        last.comment = comment;
    }
    commands
}

fn without_redirections(words: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for w in words {
        if skip {
            skip = false;
        } else if matches!(w.as_str(), ">" | ">>" | "<" | "2>" | "2>&1") {
            skip = w != "2>&1";
        } else if w.starts_with('>') || w.starts_with("2>") {
            // `>file`
        } else {
            out.push(w);
        }
    }
    out
}

#[test]
fn shell_words() {
    let c = split(
        r#"kubectl annotate --overwrite gate/x open="$(date -u +%FT%TZ)" a='b c' | grep x # out"#,
    );
    assert_eq!(
        c[0].words,
        [
            "kubectl",
            "annotate",
            "--overwrite",
            "gate/x",
            "open=$(date -u +%FT%TZ)",
            "a=b c"
        ]
    );
    assert_eq!(c[1].words, ["grep", "x"]);
    assert_eq!(c[1].comment.as_deref(), Some("out"));
    let c = commands(
        "fleetgate a \\\n  --b c > f.yaml && echo ok\n# NAME X\n",
        false,
    );
    assert_eq!(c[0].words, ["fleetgate", "a", "--b", "c"]);
    assert_eq!(c[1].comment.as_deref(), Some("NAME X"));
}
