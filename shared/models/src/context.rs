//! The context budget: pieces (files, diff hunks, feedback) rendered in the
//! caller's priority order within a byte budget, and a record of what was
//! cut, so the evidence can say what the model did not see.

use agent_zero_contracts::OmittedItem;

/// Below this many bytes left, a piece is left out rather than cut.
pub const MIN_PARTIAL_BYTES: usize = 256;

/// What a piece of context is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PieceKind {
    File,
    DiffHunk,
    Feedback,
    Other,
}

impl PieceKind {
    /// The `OmittedItem.kind` for this piece.
    pub const fn omitted_kind(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::DiffHunk => "diff-hunk",
            Self::Feedback | Self::Other => "context",
        }
    }

    const fn label(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::DiffHunk => "diff",
            Self::Feedback => "untrusted feedback",
            Self::Other => "note",
        }
    }
}

/// One piece of context: a file's content, a diff hunk, a feedback item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextPiece {
    pub kind: PieceKind,
    /// Path, hunk header or feedback id; shown in the header and in omissions.
    pub subject: String,
    pub text: String,
}

impl ContextPiece {
    /// A piece of `kind` about `subject`.
    pub fn new(kind: PieceKind, subject: impl Into<String>, text: impl Into<String>) -> Self {
        Self { kind, subject: subject.into(), text: text.into() }
    }
}

/// The rendered context and what did not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedContext {
    /// At most the budget, in bytes.
    pub text: String,
    pub omitted: Vec<OmittedItem>,
}

/// Renders `pieces` in order, whole while they fit; the first piece that
/// does not fit is cut at a line boundary if at least [`MIN_PARTIAL_BYTES`]
/// remain, and later pieces still go in if they fit whole.
pub fn render_context(pieces: &[ContextPiece], budget_bytes: usize) -> RenderedContext {
    let mut text = String::new();
    let mut omitted = Vec::new();
    for piece in pieces {
        let subject: String = piece.subject.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        let header = format!("=== {}: {subject} ===\n", piece.kind.label());
        let newline = if piece.text.ends_with('\n') { "" } else { "\n" };
        let whole = header.len() + piece.text.len() + newline.len();
        let left = budget_bytes - text.len();
        if whole <= left {
            text.push_str(&header);
            text.push_str(&piece.text);
            text.push_str(newline);
            continue;
        }
        let marker_room = 80;
        let room = left.saturating_sub(header.len() + marker_room);
        if left >= MIN_PARTIAL_BYTES && room > 0 {
            let kept = head(&piece.text, room);
            let marker = format!("\n[cut: {} of {} bytes shown]\n", kept.len(), piece.text.len());
            text.push_str(&header);
            text.push_str(kept);
            text.push_str(&marker);
            omitted.push(OmittedItem {
                kind: piece.kind.omitted_kind().into(),
                subject,
                reason: format!(
                    "cut to {} of {} bytes by the {budget_bytes}-byte context budget",
                    kept.len(),
                    piece.text.len()
                ),
            });
        } else {
            omitted.push(OmittedItem {
                kind: piece.kind.omitted_kind().into(),
                subject,
                reason: format!("left out: the {budget_bytes}-byte context budget was spent"),
            });
        }
    }
    RenderedContext { text, omitted }
}

/// The longest prefix of `text` within `max` bytes, ending at a line break
/// when one exists in its second half, else at a char boundary.
fn head(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match text[..end].rfind('\n') {
        Some(nl) if nl >= end / 2 => &text[..=nl],
        _ => &text[..end],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, bytes: usize) -> ContextPiece {
        let line = "let x = 1; // é\n";
        let text: String = line.repeat(bytes / line.len() + 1);
        let mut end = bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        ContextPiece::new(PieceKind::File, path, &text[..end])
    }

    #[test]
    fn everything_fits() {
        let pieces = [file("a.rs", 100), ContextPiece::new(PieceKind::Feedback, "comment 7", "is this null?")];
        let out = render_context(&pieces, 10_000);
        assert!(out.omitted.is_empty());
        assert!(out.text.starts_with("=== file: a.rs ===\nlet x"));
        assert!(out.text.ends_with("=== untrusted feedback: comment 7 ===\nis this null?\n"));
    }

    #[test]
    fn cuts_then_omits_and_records_both() {
        let pieces = [
            file("a.rs", 600),
            file("big.rs", 5_000),
            ContextPiece::new(PieceKind::DiffHunk, "@@ -1,3 +1,4 @@", "x".repeat(900)),
            ContextPiece::new(PieceKind::Feedback, "comment\n9", "short"),
        ];
        let budget = 1_500;
        let out = render_context(&pieces, budget);
        assert!(out.text.len() <= budget, "{}", out.text.len());
        assert!(out.text.contains("=== file: a.rs ==="));
        assert!(out.text.contains("=== file: big.rs ===") && out.text.contains("[cut: "));
        assert!(!out.text.contains("@@ -1,3"));
        assert!(out.text.contains("=== untrusted feedback: comment 9 ===\nshort\n"), "a later small piece still fits");
        assert_eq!(out.omitted.len(), 2);
        assert_eq!(out.omitted[0].kind, "file");
        assert_eq!(out.omitted[0].subject, "big.rs");
        assert!(
            out.omitted[0].reason.starts_with("cut to ")
                && out.omitted[0].reason.ends_with("of 5000 bytes by the 1500-byte context budget")
        );
        assert_eq!(out.omitted[1].kind, "diff-hunk");
        assert_eq!(out.omitted[1].reason, "left out: the 1500-byte context budget was spent");
        // The cut ends on a whole line and on a char boundary.
        let cut = out.text.split("=== file: big.rs ===\n").nth(1).unwrap();
        assert!(cut.split("\n[cut: ").next().unwrap().ends_with('\n'));
    }

    #[test]
    fn tiny_budgets_never_overflow() {
        for budget in [0, 10, 255, 256, 300, 1_000] {
            let out = render_context(&[file("a.rs", 2_000), file("b.rs", 2_000)], budget);
            assert!(out.text.len() <= budget, "{budget}: {}", out.text.len());
            assert_eq!(out.omitted.len(), 2, "{budget}");
        }
    }
}
