//! Text from a deployment is data: nothing it holds may steer the terminal.

/// `text` for one line: control characters (escape sequences, line breaks)
/// become `?`.
pub(crate) fn printable(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// `text` for a block: line breaks and tabs stay, other control characters
/// become `?`.
pub(crate) fn printable_block(text: &str) -> String {
    text.chars().map(|c| if c.is_control() && c != '\n' && c != '\t' { '?' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_never_reach_the_terminal() {
        assert_eq!(printable("title\u{1b}[2J\nnext"), "title?[2J?next");
        assert_eq!(printable_block("a\n\tb\u{7}"), "a\n\tb?");
    }
}
