//! The README and `docs/` hold together: every relative Markdown link in
//! them resolves to a file of this repository (and its `#anchor` to a
//! heading of that file), no link leaves the repository, and the layout in
//! `docs/architecture.md` names what the repository holds at its top level.
//! Reads the checkout's files only.

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};

fn root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap()
}

/// README.md and every `docs/*.md`, as paths relative to the root.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs = vec![PathBuf::from("README.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| path.strip_prefix(root).unwrap().to_path_buf())
        .collect();
    more.sort();
    docs.extend(more);
    docs
}

/// The text outside fenced code blocks, with inline code spans blanked, one
/// entry per line (1-based line numbers kept).
fn prose(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let mut plain = String::with_capacity(line.len());
        let mut in_code = false;
        for ch in line.chars() {
            if ch == '`' {
                in_code = !in_code;
                plain.push(' ');
            } else {
                plain.push(if in_code { ' ' } else { ch });
            }
        }
        out.push((index + 1, plain));
    }
    out
}

/// Every link target in a document: inline `[text](target)` and reference
/// definitions `[label]: target`, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (line_no, line) in prose(text) {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[')
            && let Some(end) = trimmed.find("]:")
        {
            if let Some(target) = trimmed[end + 2..].split_whitespace().next() {
                out.push((line_no, target.trim_matches(['<', '>']).to_owned()));
            }
            continue;
        }
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(close) = after.find(')') else { break };
            let target = after[..close].split_whitespace().next().unwrap_or("");
            out.push((line_no, target.trim_matches(['<', '>']).to_owned()));
            rest = &after[close..];
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces
/// to hyphens; a repeated heading gets `-1`, `-2`, ….
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_keeping_code(text) {
        let Some(heading) = line.strip_prefix('#') else { continue };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let slug: String = heading
            .trim()
            .chars()
            .filter_map(|ch| match ch {
                ' ' => Some('-'),
                '-' | '_' => Some(ch),
                ch if ch.is_alphanumeric() => Some(ch.to_lowercase().next().unwrap_or(ch)),
                _ => None,
            })
            .collect();
        let count = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *count == 0 { slug.clone() } else { format!("{slug}-{count}") });
        *count += 1;
    }
    out
}

/// Lines outside fenced code blocks, inline code kept (a heading's anchor
/// keeps the text of its code spans).
fn prose_keeping_code(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        } else if !fence {
            out.push((index + 1, line.to_owned()));
        }
    }
    out
}

/// `path` with `.` and `..` resolved lexically; `None` when it climbs above
/// the root.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(name) => out.push(name),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

#[test]
fn every_relative_link_in_readme_and_docs_resolves() {
    let root = root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents(&root) {
        let text = std::fs::read_to_string(root.join(&doc)).unwrap();
        for (line, target) in links(&text) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                Some(doc.clone())
            } else {
                normalise(&doc.parent().unwrap_or(Path::new("")).join(path))
            };
            let Some(file) = file else {
                broken.push(format!("{}:{line}: `{target}` leaves the repository", doc.display()));
                continue;
            };
            if !root.join(&file).exists() {
                broken.push(format!("{}:{line}: `{target}`: no file {}", doc.display(), file.display()));
                continue;
            }
            if let Some(anchor) = anchor
                && file.extension().is_some_and(|ext| ext == "md")
            {
                let target_text = std::fs::read_to_string(root.join(&file)).unwrap();
                if !anchors(&target_text).contains(anchor) {
                    broken.push(format!(
                        "{}:{line}: `{target}`: {} has no heading for #{anchor}",
                        doc.display(),
                        file.display()
                    ));
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} links found: is the parser reading the files?");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn no_document_cites_a_file_outside_the_repository() {
    let root = root();
    for doc in documents(&root) {
        let text = std::fs::read_to_string(root.join(&doc)).unwrap();
        for name in ["DESIGN.md", "HOSTS.md", "../shared/"] {
            assert!(!text.contains(name), "{} cites `{name}`, which is not in this repository", doc.display());
        }
    }
}

#[test]
fn the_readme_is_a_map() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 400, "README.md has {lines} lines; move depth to docs/");
    // Its first command runs the product locally, its second every test.
    let blocks: Vec<&str> = readme.split("```sh\n").skip(1).filter_map(|block| block.split("```").next()).collect();
    assert_eq!(blocks.first().map(|block| block.trim()), Some("tests/scripts/dev.sh"));
    assert_eq!(blocks.get(1).map(|block| block.trim()), Some("tests/scripts/test.sh"));
}

/// Each top-level entry the repository tracks is named in the layout of
/// `docs/architecture.md` (its block or the paragraph after it), and each
/// path the block's first column names exists.
#[test]
fn the_layout_names_the_top_level_entries() {
    let root = root();
    let text = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let section = &text[text.find("\n## Layout\n").expect("a Layout section")..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |end| end + 1)];
    let block = section.split("```").nth(1).expect("a layout block");
    for line in block.lines().filter(|line| !line.starts_with(' ') && !line.is_empty()) {
        let names = line.split("  ").next().unwrap_or(line);
        for name in names.split(", ").map(|name| name.trim().trim_end_matches('/')) {
            let name = name.split_whitespace().next().unwrap_or(name);
            assert!(root.join(name).exists(), "the layout names `{name}`, which does not exist");
        }
    }
    let Ok(output) = std::process::Command::new("git").arg("ls-files").current_dir(&root).output() else {
        return; // not a git checkout: nothing to compare against
    };
    if !output.status.success() {
        return;
    }
    let tracked: BTreeSet<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|path| path.split('/').next().map(str::to_owned))
        .collect();
    for entry in tracked {
        assert!(
            section.contains(&entry),
            "`{entry}` is tracked at the top level but docs/architecture.md's layout does not name it"
        );
    }
}
