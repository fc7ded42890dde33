//! The character level of the YAML subset: a cursor over the text with
//! its line and column, the whitespace and comment rules, and the three
//! scalar styles (plain, quoted, block) with YAML's folding.
//!
//! Positions are YAML's: a 1-based line and a column counted in
//! characters; errors carry `at line L column C`.

use super::PolicyError;

/// A cursor over the policy text.
pub(super) struct Scanner<'a> {
    src: &'a str,
    pos: usize,
    /// 1-based line of `pos`.
    pub(super) line: usize,
    /// 0-based column of `pos`, in characters.
    pub(super) col: usize,
    /// Byte offset where the line of `pos` starts.
    line_start: usize,
    /// Only blanks precede `pos` on its line, and whether a tab is among
    /// them: kept as the cursor moves, so no check rescans a long line.
    blank_prefix: bool,
    tab_in_prefix: bool,
}

/// A position: 1-based line, 0-based column.
pub(super) type Mark = (usize, usize);

/// `c` separates tokens on a line.
pub(super) fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// `c` ends a token: a blank, a line break, or the end of the text (`'\0'`).
pub(super) fn is_blank_or_end(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\0')
}

fn is_flow(c: char) -> bool {
    matches!(c, ',' | '[' | ']' | '{' | '}')
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `src`, after a byte order mark; control
    /// characters, a stray carriage return and a later byte order mark are
    /// refused here, so no other code has to think of them.
    pub(super) fn new(src: &'a str) -> Result<Self, PolicyError> {
        let mut scanner =
            Self { src, pos: 0, line: 1, col: 0, line_start: 0, blank_prefix: true, tab_in_prefix: false };
        if src.starts_with('\u{feff}') {
            scanner.pos = 3;
            scanner.line_start = 3;
        }
        let (mut line, mut col) = (1, 0);
        let mut chars = src[scanner.pos..].chars().peekable();
        while let Some(c) = chars.next() {
            let stray_return = c == '\r' && chars.peek() != Some(&'\n');
            if stray_return || c == '\u{feff}' || (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) {
                return Err(error((line, col), "a control character, byte order mark or lone carriage return"));
            }
            if c == '\n' {
                (line, col) = (line + 1, 0);
            } else if c != '\r' {
                col += 1;
            }
        }
        Ok(scanner)
    }

    pub(super) fn mark(&self) -> Mark {
        (self.line, self.col)
    }

    /// The next character, `'\0'` at the end of the text.
    pub(super) fn peek(&self) -> char {
        self.src[self.pos..].chars().next().unwrap_or('\0')
    }

    /// The character `n` after the next one.
    pub(super) fn peek_at(&self, n: usize) -> char {
        self.src[self.pos..].chars().nth(n).unwrap_or('\0')
    }

    pub(super) fn at_end(&self) -> bool {
        self.pos == self.src.len()
    }

    /// Moves over the next character (a `\r\n` pair as one).
    pub(super) fn bump(&mut self) {
        let c = self.peek();
        if self.at_end() {
            return;
        }
        if c == '\r' {
            self.pos += 1;
        }
        self.pos += self.peek().len_utf8();
        if c == '\r' || c == '\n' {
            self.line += 1;
            self.col = 0;
            self.line_start = self.pos;
            (self.blank_prefix, self.tab_in_prefix) = (true, false);
        } else {
            self.col += 1;
            if c == '\t' {
                self.tab_in_prefix |= self.blank_prefix;
            } else if c != ' ' {
                self.blank_prefix = false;
            }
        }
    }

    fn at_break(&self) -> bool {
        matches!(self.peek(), '\n' | '\r')
    }

    /// `---` or `...` at the start of a line, alone or before a blank.
    pub(super) fn at_marker(&self, marker: &str) -> bool {
        self.col == 0 && self.src[self.pos..].starts_with(marker) && is_blank_or_end(self.peek_at(3))
    }

    fn at_document_marker(&self) -> bool {
        self.at_marker("---") || self.at_marker("...")
    }

    /// The column of the next content, or -1 at the end of the text or of
    /// the document: what a block collection compares its indentation to.
    pub(super) fn indent(&self) -> isize {
        if self.at_end() || self.at_document_marker() { -1 } else { self.col as isize }
    }

    /// An error at the cursor; at the end of the text, the start of the
    /// line after it, as YAML scanners report it.
    pub(super) fn error(&self, message: &str) -> PolicyError {
        error(self.end_mark(), message)
    }

    /// The cursor, or at the end of the text the start of the line after it.
    pub(super) fn end_mark(&self) -> Mark {
        if self.at_end() && self.col > 0 { (self.line + 1, 0) } else { self.mark() }
    }

    /// Moves over spaces and tabs; whether a tab was among them.
    pub(super) fn skip_blanks(&mut self) -> bool {
        let mut tab = false;
        while is_blank(self.peek()) {
            tab |= self.peek() == '\t';
            self.bump();
        }
        tab
    }

    /// Only blanks precede the cursor on its line.
    pub(super) fn at_line_start(&self) -> bool {
        self.blank_prefix
    }

    /// At `#`: a comment when it starts the line or follows a blank.
    fn at_comment(&self) -> Result<bool, PolicyError> {
        if self.peek() != '#' {
            return Ok(false);
        }
        if self.pos > self.line_start && !matches!(self.src.as_bytes()[self.pos - 1], b' ' | b'\t') {
            return Err(self.error("a comment must be separated from what precedes it by a space"));
        }
        Ok(true)
    }

    /// Moves over blanks and a comment to the end of the line, not past it.
    pub(super) fn skip_to_line_end(&mut self) -> Result<(), PolicyError> {
        self.skip_blanks();
        if self.at_comment()? {
            while !self.at_break() && !self.at_end() {
                self.bump();
            }
        }
        Ok(())
    }

    /// Moves over blanks, comments and line breaks to the next content.
    /// Content may not be indented with a tab.
    pub(super) fn skip_lines(&mut self) -> Result<(), PolicyError> {
        loop {
            self.skip_to_line_end()?;
            if !self.at_break() {
                break;
            }
            self.bump();
        }
        if !self.at_end() && self.tab_in_prefix && self.blank_prefix {
            return Err(self.error("a tab indents this line; YAML indentation is spaces"));
        }
        Ok(())
    }

    /// After a node: only blanks and a comment may follow it on its line;
    /// then on to the next content.
    pub(super) fn finish(&mut self) -> Result<(), PolicyError> {
        self.skip_to_line_end()?;
        if !self.at_end() && !self.at_break() && !self.at_line_start() {
            return Err(self.found("unexpected", "after a value"));
        }
        self.skip_lines()
    }

    /// "`prefix` `c` `suffix`" for the character at the cursor.
    pub(super) fn found(&self, prefix: &str, suffix: &str) -> PolicyError {
        let c = self.peek();
        let what = if self.at_end() { "end of the file".to_owned() } else { format!("`{c}`") };
        self.error(&format!("{prefix} {what} {suffix}"))
    }

    /// An `&name` before a node: skipped (a policy has no aliases to
    /// refer to it), but its value must follow on the same line.
    pub(super) fn skip_anchor(&mut self) -> Result<(), PolicyError> {
        self.bump();
        let start = self.pos;
        while !is_blank_or_end(self.peek()) && !is_flow(self.peek()) {
            self.bump();
        }
        if self.pos == start || self.peek() != ' ' {
            return Err(self.error("an anchor (`&name`) must be followed by a space and its value"));
        }
        self.skip_blanks();
        if matches!(self.peek(), '\n' | '\r' | '\0' | '#' | '&') {
            return Err(self.error("an anchor (`&name`) must have its value on the same line"));
        }
        Ok(())
    }

    /// The character may start a plain scalar (`in_flow`: inside `[]`/`{}`).
    pub(super) fn at_plain_start(&self, in_flow: bool) -> bool {
        let (c, next) = (self.peek(), self.peek_at(1));
        match c {
            '-' | '?' | ':' => !(is_blank_or_end(next) || in_flow && is_flow(next)),
            _ => !is_blank_or_end(c) && !"[]{},#&*!|>'\"%@`".contains(c),
        }
    }

    /// The character at the cursor continues a plain scalar.
    fn in_plain(&self, in_flow: bool) -> bool {
        let (c, next) = (self.peek(), self.peek_at(1));
        !(is_blank_or_end(c) || in_flow && is_flow(c))
            && !(c == ':' && (is_blank_or_end(next) || (in_flow && is_flow(next))))
    }

    /// A plain scalar whose continuation lines are indented deeper than
    /// `parent`, its lines joined by [`fold`]. The cursor ends after the
    /// blanks that follow it, possibly on a later line.
    pub(super) fn plain(&mut self, parent: isize, in_flow: bool) -> Result<String, PolicyError> {
        let mut text = String::new();
        let mut blanks = String::new();
        let mut breaks = 0;
        loop {
            if self.at_document_marker() || self.peek() == '#' {
                break;
            }
            if in_flow && self.peek() == '-' && is_flow(self.peek_at(1)) {
                return Err(self.error("a plain scalar may not start with `-` before `,[]{}`"));
            }
            if self.in_plain(in_flow) {
                fold(&mut text, &blanks, breaks);
                (breaks, blanks) = (0, String::new());
                while self.in_plain(in_flow) {
                    text.push(self.peek());
                    self.bump();
                }
            }
            if !is_blank(self.peek()) && !self.at_break() {
                break;
            }
            while is_blank(self.peek()) || self.at_break() {
                if self.at_break() {
                    breaks += 1;
                    blanks.clear();
                } else if breaks == 0 {
                    blanks.push(self.peek());
                } else if self.peek() == '\t' {
                    self.skip_blanks();
                    if !self.at_break() && !self.at_end() {
                        return Err(self.error("a tab indents this line; YAML indentation is spaces"));
                    }
                    continue;
                }
                self.bump();
            }
            if breaks > 0 && (self.col as isize) <= parent {
                break;
            }
        }
        Ok(text)
    }

    /// A single- or double-quoted scalar; continuation lines are indented
    /// deeper than `parent` and fold like a plain scalar's.
    pub(super) fn quoted(&mut self, parent: isize) -> Result<String, PolicyError> {
        let start = self.mark();
        let quote = self.peek();
        self.bump();
        let mut text = String::new();
        loop {
            if self.at_document_marker() {
                return Err(self.error("a document marker inside a quoted scalar"));
            }
            if self.at_end() {
                return Err(error(start, "a quoted scalar without its closing quote"));
            }
            let mut escaped_break = false;
            while !is_blank_or_end(self.peek()) {
                let c = self.peek();
                if c == quote && quote == '\'' && self.peek_at(1) == '\'' {
                    text.push('\'');
                    self.bump();
                } else if c == quote {
                    break;
                } else if c == '\\' && quote == '"' {
                    if matches!(self.peek_at(1), '\n' | '\r') {
                        self.bump();
                        self.bump();
                        escaped_break = true;
                        break;
                    }
                    text.push(self.escape()?);
                    continue;
                } else {
                    text.push(c);
                }
                self.bump();
            }
            if self.peek() == quote {
                self.bump();
                return Ok(text);
            }
            let mut blanks = String::new();
            let mut breaks = 0;
            while is_blank(self.peek()) || self.at_break() {
                if self.at_break() {
                    breaks += 1;
                    blanks.clear();
                } else if breaks == 0 && !escaped_break {
                    blanks.push(self.peek());
                } else if self.peek() == '\t' && self.col as isize <= parent {
                    return Err(self.error("a tab indents this line; YAML indentation is spaces"));
                }
                self.bump();
            }
            if (escaped_break || breaks > 0) && (self.col as isize) <= parent && !self.at_end() {
                return Err(self.error("a quoted scalar's next line must be indented past its parent"));
            }
            if escaped_break {
                // The escaped break itself folds to nothing; the empty
                // lines after it are kept.
                text.extend(std::iter::repeat_n('\n', breaks));
            } else {
                fold(&mut text, &blanks, breaks);
            }
        }
    }

    /// The character of a `\` escape in a double-quoted scalar.
    fn escape(&mut self) -> Result<char, PolicyError> {
        let at = self.mark();
        let code = self.peek_at(1);
        let simple = match code {
            '0' => '\0',
            'a' => '\x07',
            'b' => '\x08',
            't' | '\t' => '\t',
            'n' => '\n',
            'v' => '\x0b',
            'f' => '\x0c',
            'r' => '\r',
            'e' => '\x1b',
            ' ' | '"' | '/' | '\\' => code,
            'N' => '\u{85}',
            '_' => '\u{a0}',
            'L' => '\u{2028}',
            'P' => '\u{2029}',
            _ => '\u{fffe}',
        };
        let digits = match code {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ if simple == '\u{fffe}' => return Err(error(at, "an unknown escape in a double-quoted scalar")),
            _ => 0,
        };
        self.bump();
        self.bump();
        let mut value = 0;
        for _ in 0..digits {
            let digit = self.peek().to_digit(16).ok_or_else(|| error(at, "an escape without its hex digits"))?;
            value = value * 16 + digit;
            self.bump();
        }
        if digits == 0 {
            return Ok(simple);
        }
        char::from_u32(value).ok_or_else(|| error(at, "an escape of an invalid Unicode character"))
    }

    /// A `|` or `>` block scalar inside a block collection indented at
    /// `parent`: its text, and where it starts (its first content line,
    /// or the indicator when it has none).
    pub(super) fn block_scalar(&mut self, parent: isize) -> Result<(String, Mark), PolicyError> {
        let start = self.mark();
        let literal = self.peek() == '|';
        self.bump();
        let (mut keep, mut strip, mut step) = (false, false, 0);
        for _ in 0..2 {
            match self.peek() {
                '+' if !keep && !strip => keep = true,
                '-' if !keep && !strip => strip = true,
                '1'..='9' if step == 0 => step = self.peek() as usize - '0' as usize,
                '0' => return Err(self.error("a block scalar's indentation indicator must be 1 to 9")),
                _ => break,
            }
            self.bump();
        }
        if !is_blank_or_end(self.peek()) {
            return Err(self.error("a block scalar header is `|` or `>`, then `+`/`-` and a digit"));
        }
        self.skip_to_line_end()?;
        if !self.at_end() && !self.at_break() {
            return Err(self.found("unexpected", "after a block scalar header"));
        }
        self.bump();
        if self.peek() == '\t' {
            return Err(self.error("a block scalar's content may not start with a tab"));
        }
        let mut breaks = 0;
        let indent = if step > 0 {
            let indent = if parent >= 0 { parent as usize + step } else { step };
            self.skip_indent(indent, &mut breaks);
            indent
        } else {
            let mut widest = 0;
            loop {
                while self.peek() == ' ' {
                    self.bump();
                }
                widest = widest.max(self.col);
                if !self.at_break() {
                    break;
                }
                breaks += 1;
                self.bump();
            }
            widest.max((parent + 1) as usize).max(usize::from(parent > 0))
        };
        if self.at_end() {
            let text = match (keep, breaks) {
                (false, _) => String::new(),
                (true, 0) if self.line > start.0 && self.col > 0 => "\n".to_owned(),
                (true, n) => "\n".repeat(n),
            };
            return Ok((text, start));
        }
        if self.col < indent && self.col as isize > parent {
            return Err(self.error("a line of a block scalar is indented less than its first line"));
        }
        let first = self.mark();
        let mut text = String::new();
        let (mut leading_break, mut leading_blank) = (false, false);
        while self.col == indent && !self.at_break() && !self.at_end() {
            if indent == 0 && self.at_document_marker() {
                break;
            }
            let trailing_blank = is_blank(self.peek());
            if !literal && leading_break && !leading_blank && !trailing_blank {
                if breaks == 0 {
                    text.push(' ');
                }
            } else if leading_break {
                text.push('\n');
            }
            text.extend(std::iter::repeat_n('\n', breaks));
            (leading_break, breaks) = (false, 0);
            leading_blank = trailing_blank;
            while !self.at_break() && !self.at_end() {
                text.push(self.peek());
                self.bump();
            }
            if self.at_end() {
                break;
            }
            self.bump();
            leading_break = true;
            self.skip_indent(indent, &mut breaks);
        }
        if !strip {
            if leading_break {
                text.push('\n');
            }
            if self.at_end() && self.col >= indent.max(1) {
                text.push('\n');
            }
        }
        if keep {
            text.extend(std::iter::repeat_n('\n', breaks));
        }
        Ok((text, first))
    }

    /// Moves over up to `indent` spaces of each line, counting empty lines.
    fn skip_indent(&mut self, indent: usize, breaks: &mut usize) {
        loop {
            while self.col < indent && self.peek() == ' ' {
                self.bump();
            }
            if !self.at_break() {
                break;
            }
            *breaks += 1;
            self.bump();
        }
    }
}

/// YAML's line folding inside a flow scalar (plain or quoted): the blanks
/// between two words on one line are kept; one line break becomes a
/// space; `n` breaks become `n - 1` newlines.
fn fold(text: &mut String, blanks: &str, breaks: usize) {
    match breaks {
        0 => text.push_str(blanks),
        1 => text.push(' '),
        _ => text.extend(std::iter::repeat_n('\n', breaks - 1)),
    }
}

/// The one way an error is made: the reason and the position.
pub(super) fn error((line, col): Mark, message: &str) -> PolicyError {
    PolicyError::Syntax { message: format!("{message} at line {line} column {}", col + 1) }
}
