//! Setting names in a dotenv file (`.env.deploy`) without disturbing the
//! rest of it: [`with_settings`] drops every earlier assignment of a name it
//! sets (active or commented out, a multi-line double-quoted value whole)
//! and appends the new block; the result reads back with
//! [`crate::deploy::parse_env`] to exactly the values given.

/// The end of the comment that heads the block `init github-app` writes;
/// an earlier one is dropped with the settings under it.
pub(crate) const MARKER: &str = "(agent-zero init github-app)";

/// One line of the block: a setting, or the same commented out (kept for
/// later, not deployed), or a comment.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Line {
    /// `NAME=value`.
    Set(&'static str, String),
    /// `# NAME=value`: recorded, not deployed.
    Commented(&'static str, String),
    /// `# text`.
    Comment(String),
}

impl std::fmt::Debug for Line {
    // Never a value: these are secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Set(name, _) => write!(f, "Set({name})"),
            Self::Commented(name, _) => write!(f, "Commented({name})"),
            Self::Comment(text) => write!(f, "Comment({text:?})"),
        }
    }
}

/// `value` as the right-hand side of `NAME=`: bare when parse_env reads it
/// back unchanged, else double-quoted with line breaks as `\n` (a PEM key).
fn quoted(value: &str) -> String {
    let bare = !value.is_empty()
        && value.chars().all(|c| c.is_ascii_graphic() && !matches!(c, '"' | '\'' | '#' | '\\'))
        && !value.starts_with("export");
    if bare { value.to_owned() } else { format!("\"{}\"", value.replace('"', "\\\"").replace('\n', "\\n")) }
}

/// The name a line assigns, active (`NAME=`, `export NAME=`) or commented
/// out (`# NAME=`), with the rest of the line after `=`.
fn assignment(line: &str) -> Option<(&str, &str)> {
    let line = line.trim();
    let line = line.strip_prefix('#').map_or(line, str::trim_start);
    let line = line.strip_prefix("export ").unwrap_or(line);
    let (name, value) = line.split_once('=')?;
    let name = name.trim();
    let plausible = !name.is_empty() && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    plausible.then_some((name, value.trim()))
}

/// `text` with each name in `lines` assigned anew at the end (earlier
/// assignments of those names removed, the other lines kept as they were).
pub(crate) fn with_settings(text: &str, lines: &[Line]) -> String {
    let names: Vec<&str> = lines
        .iter()
        .filter_map(|l| match l {
            Line::Set(n, _) | Line::Commented(n, _) => Some(*n),
            Line::Comment(_) => None,
        })
        .collect();
    let mut kept = String::new();
    let mut source = text.lines();
    while let Some(line) = source.next() {
        match assignment(line) {
            Some((name, value)) if names.contains(&name) => {
                // A double-quoted value runs to its closing quote, as
                // parse_env reads it.
                if let Some(rest) = value.strip_prefix('"') {
                    let mut raw = rest.to_owned();
                    while !raw.ends_with('"') || raw.ends_with("\\\"") {
                        let Some(next) = source.next() else { break };
                        raw.push('\n');
                        raw.push_str(next.trim_end());
                    }
                }
            }
            _ if line.trim_start().starts_with('#') && line.trim_end().ends_with(MARKER) => {}
            _ => {
                kept.push_str(line);
                kept.push('\n');
            }
        }
    }
    if !kept.is_empty() && !kept.ends_with("\n\n") {
        kept.push('\n');
    }
    for line in lines {
        match line {
            Line::Set(name, value) => kept.push_str(&format!("{name}={}\n", quoted(value))),
            Line::Commented(name, value) => kept.push_str(&format!("# {name}={}\n", quoted(value))),
            Line::Comment(text) => kept.push_str(&format!("# {text}\n")),
        }
    }
    kept
}

/// Writes `text` to `path` and makes it readable by its owner only (it
/// holds a private key now).
pub(crate) fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    #[cfg(unix)]
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    std::io::Write::write_all(&mut file, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deploy::parse_env;

    const PEM: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIE+/=\nabc\n-----END RSA PRIVATE KEY-----\n";

    #[test]
    fn new_values_replace_old_ones_and_read_back_exactly() {
        let before = "# mine\n# GitHub App old (agent-zero init github-app)\nOPENAI_API_KEY=sk-1\nGITHUB_WEBHOOK_SECRET=old\nGITHUB_APP_PRIVATE_KEY=\"-----BEGIN\nold\n-----END\"\n# AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID=Iv1.old\nAGENT_ZERO_PLATFORM=cloudflare-free\n";
        let after = with_settings(
            before,
            &[
                Line::Comment(format!("GitHub App x {MARKER}")),
                Line::Set("GITHUB_APP_ID", "1".into()),
                Line::Set("GITHUB_APP_PRIVATE_KEY", PEM.into()),
                Line::Set("GITHUB_WEBHOOK_SECRET", "e3401541".into()),
                Line::Commented("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID", "Iv1.8a61".into()),
            ],
        );
        let pairs = parse_env(&after).unwrap();
        let get = |n: &str| pairs.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("GITHUB_APP_PRIVATE_KEY"), Some(PEM));
        assert_eq!(get("GITHUB_WEBHOOK_SECRET"), Some("e3401541"));
        assert_eq!(get("GITHUB_APP_ID"), Some("1"));
        assert_eq!(get("OPENAI_API_KEY"), Some("sk-1"));
        assert_eq!(get("AGENT_ZERO_PLATFORM"), Some("cloudflare-free"));
        assert_eq!(get("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID"), None, "commented out");
        assert!(!after.contains("old"), "{after}");
        assert_eq!(after.matches("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID").count(), 1);
        assert!(after.starts_with("# mine\nOPENAI_API_KEY=sk-1\n"));
        // Applying it again changes nothing.
        let lines = [Line::Set("GITHUB_APP_ID", "1".into())];
        assert_eq!(with_settings(&with_settings("", &lines), &lines), with_settings("", &lines));
    }

    #[test]
    fn values_parse_env_would_change_are_quoted() {
        for value in ["a b", "x #y", "'q'", "\"d\"", "back\\slash", "", "export"] {
            let text = with_settings("", &[Line::Set("V", value.into())]);
            assert_eq!(parse_env(&text).unwrap(), [("V".to_owned(), value.to_owned())], "{text}");
        }
    }
}
