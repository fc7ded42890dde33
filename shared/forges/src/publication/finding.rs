//! The first line of a line comment of ours, whatever the forge: the
//! finding's quote, hex-encoded, so untrusted text never shapes the
//! markup, and a retried review knows the comment is already there.

/// Most bytes of a quote a comment's marker keeps (whole characters).
pub const MARKED_QUOTE_BYTES: usize = 200;
const FINDING_PREFIX: &str = "<!-- agent-zero:finding quote=";
const LINE_PREFIX: &str = "<!-- agent-zero:finding line=";
const MARKER_END: &str = " -->";

/// The marker of a line comment on `quote` (its first
/// [`MARKED_QUOTE_BYTES`], cut at a character).
pub fn finding_marker(quote: &str) -> String {
    let mut end = quote.len().min(MARKED_QUOTE_BYTES);
    while !quote.is_char_boundary(end) {
        end -= 1;
    }
    format!("{FINDING_PREFIX}{}{MARKER_END}", hex::encode(&quote.as_bytes()[..end]))
}

/// The first line of a line comment of ours on GitLab or Gitea: the
/// quote's marker ([`finding_marker`]), or the line when there is none.
pub fn comment_marker(comment: &agent_zero_evidence::ReviewComment) -> String {
    match comment.quote.as_deref() {
        Some(quote) => finding_marker(quote),
        None => format!("{LINE_PREFIX}{}{MARKER_END}", comment.line),
    }
}

/// The quote the marker on `body`'s first line holds, if it is one.
pub fn marked_quote(body: &str) -> Option<String> {
    let hex = body.lines().next()?.strip_prefix(FINDING_PREFIX)?.strip_suffix(MARKER_END)?;
    if hex.is_empty() {
        return None;
    }
    String::from_utf8(hex::decode(hex).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_marker_holds_its_quote_as_hex_only() {
        let quote = "return x --> <script> ü";
        let mark = finding_marker(quote);
        assert!(mark.starts_with(FINDING_PREFIX) && mark.ends_with(MARKER_END), "{mark}");
        let hex = &mark[FINDING_PREFIX.len()..mark.len() - MARKER_END.len()];
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{mark}");
        assert_eq!(marked_quote(&format!("{mark}\n**Agent Zero**")).as_deref(), Some(quote));
        // Long quotes keep whole characters within the cap.
        let long = "é".repeat(150);
        let kept = marked_quote(&finding_marker(&long)).unwrap();
        assert!(kept.len() <= MARKED_QUOTE_BYTES && long.starts_with(&kept), "{kept}");
        assert_eq!(kept.len(), 200);
        assert_eq!(marked_quote("<!-- agent-zero:finding quote=zz -->"), None);
        assert_eq!(marked_quote("<!-- agent-zero:finding quote=616 -->"), None);
        assert_eq!(marked_quote("a reviewer's comment"), None);
    }
}
