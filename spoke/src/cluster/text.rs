//! Text the spoke writes for people to read (Event notes, condition messages, annotations).

/// `text` as the spoke writes it for people to read (Event notes, condition
/// messages): U+0000 replaced by U+FFFD, as the hub stores reported text (the API
/// server would keep the NUL, but terminals and event exporters choke on it), and
/// cut to `max_bytes` at a character boundary, ending in " ..." when cut (as
/// kube-scheduler's `truncateMessage` does for its Events).
pub fn fit_text(text: &str, max_bytes: usize) -> String {
    let text = fleetgate_policy::text::replace_str(text);
    if text.len() <= max_bytes {
        return text.into_owned();
    }
    const CUT: &str = " ...";
    let mut end = max_bytes.saturating_sub(CUT.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT}", &text[..end])
}
