//! Which documentation a repository runs or compiles in, read from the
//! repository's own files: a doc file is `mechanical` only while nothing
//! includes or runs it.
//!
//! Pure: the caller reads the files [`DocUse::is_evidence`] asks for and
//! passes their contents to [`DocUse::from_files`].

use super::{HighImpactKind, PathClass, classify_path, clean, normalize};

/// The documentation a repository executes or includes. Built by the caller
/// from repository evidence ([`DocUse::from_files`]); the default names
/// nothing, which is what [`classify_change_risk`](super::classify_change_risk) assumes.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DocUse {
    /// Files a runner executes as doctests, as globs. A glob without `/`
    /// matches a file name anywhere (pytest's `--doctest-glob`); one with
    /// `/` the repository-relative path. `*` also matches `/`, as `fnmatch`
    /// does, so a glob never matches less than the tool would.
    pub doctest_globs: Vec<String>,
    /// Repository-relative paths or globs that code compiles in or a test
    /// reads as a doctest: `include_str!`, `include_bytes!`, `include!`,
    /// `//go:embed`, ExUnit's `doctest_file`, Python's `doctest.testfile`.
    /// A directory names every file below it.
    pub included: Vec<String>,
}

impl DocUse {
    /// Whether `path` is a file the repository runs as a doctest or compiles in.
    pub fn names(&self, path: &str) -> bool {
        let path = normalize(path);
        let name = path.rsplit('/').next().unwrap_or_default();
        let doctest = self.doctest_globs.iter().map(|g| g.to_ascii_lowercase()).any(|glob| {
            let glob = glob.trim_start_matches("./");
            if glob.contains('/') { matches(glob, &path) } else { matches(glob, name) }
        });
        doctest
            || self.included.iter().map(|p| normalize(p)).any(|included| {
                matches(&included, &path) || path.strip_prefix(included.as_str()).is_some_and(|r| r.starts_with('/'))
            })
    }

    /// Whether it names nothing (no documentation runs or is included).
    pub fn is_empty(&self) -> bool {
        self.doctest_globs.is_empty() && self.included.is_empty()
    }

    /// The files [`DocUse::from_files`] reads in a checkout of `files`:
    /// configuration that runs doctests, and of source, only the roots that
    /// include documentation (`lib.rs`, `main.rs`): at most `max`.
    pub fn evidence_in(files: &[String], max: usize) -> Vec<&str> {
        files
            .iter()
            .map(String::as_str)
            .filter(|path| {
                let name = path.rsplit('/').next().unwrap_or_default();
                let source = matches!(name.rsplit_once('.').map(|(_, e)| e), Some("rs" | "go" | "ex" | "exs" | "py"));
                Self::is_evidence(path) && (!source || matches!(name, "lib.rs" | "main.rs" | "conf.py"))
            })
            .take(max)
            .collect()
    }

    /// Whether [`DocUse::from_files`] reads `path`: the files that configure
    /// how the repository runs (automation, build, check and dependency
    /// configuration), Sphinx `conf.py`, `book.toml`, `mkdocs.yml`,
    /// Docusaurus and VitePress configuration, and Rust, Go, Elixir and
    /// Python sources.
    pub fn is_evidence(path: &str) -> bool {
        let path = normalize(path);
        let name = path.rsplit('/').next().unwrap_or_default();
        let ext = name.rsplit_once('.').map_or("", |(_, ext)| ext);
        runs_things(&path)
            || matches!(name, "conf.py" | "book.toml" | "mkdocs.yml" | "mkdocs.yaml")
            || name.starts_with("docusaurus.config.")
            || path.contains(".vitepress/config.")
            || matches!(ext, "rs" | "go" | "ex" | "exs" | "py")
    }

    /// What `files` (repository-relative path and content) say the
    /// repository runs or includes. Files [`DocUse::is_evidence`] rejects
    /// are ignored, so prose that only mentions `--doctest-glob` names nothing.
    ///
    /// `--doctest-modules` runs docstrings, not documentation files: those
    /// are inline tests ([`has_inline_tests`](super::has_inline_tests)).
    /// Sphinx `.. include::` chains are not followed.
    pub fn from_files(files: &[(&str, &str)]) -> Self {
        let mut found = Self::default();
        let manifests: Vec<String> = files.iter().map(|(p, _)| clean(p)).collect();
        for (path, content) in files {
            // Paths keep their case; names are compared lowercased.
            let path = clean(path);
            if !Self::is_evidence(&path) {
                continue;
            }
            let lower = path.to_ascii_lowercase();
            let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
            let name = lower.rsplit('/').next().unwrap_or_default();
            let ext = name.rsplit_once('.').map_or("", |(_, ext)| ext);
            if runs_things(&path) {
                found.doctest_globs.extend(flag_values(content, "--doctest-glob"));
                let pytest_section = ["[tool.pytest", "[tool:pytest]", "[pytest]", "doctest_optionflags"];
                if matches!(name, "pytest.ini" | "conftest.py") || pytest_section.iter().any(|s| content.contains(s)) {
                    // pytest collects `test*.txt` as doctests unless told otherwise.
                    found.doctest_globs.push("test*.txt".into());
                }
            }
            let docs_under = |sub: &str| under(&under(dir, sub), "*.md");
            if name == "conf.py" && content.contains("sphinx.ext.doctest") {
                for prose in ["*.rst", "*.md", "*.txt"] {
                    found.doctest_globs.push(under(dir, prose));
                }
            } else if name == "book.toml" {
                // `mdbook test` compiles and runs the Rust blocks of the book.
                found.doctest_globs.push(docs_under(&toml_string(content, "src").unwrap_or_else(|| "src".into())));
            } else if name.starts_with("mkdocs.") && content.contains("markdown-exec") {
                found
                    .doctest_globs
                    .push(docs_under(&toml_string(content, "docs_dir").unwrap_or_else(|| "docs".into())));
            } else if name.starts_with("docusaurus.config.") {
                // Docusaurus compiles Markdown as MDX: imports and JSX run at build.
                found.doctest_globs.extend(["docs", "blog", "src/pages"].map(docs_under));
            } else if let Some(at) = lower.find(".vitepress/config.") {
                // VitePress pages may hold `<script setup>` that runs at build.
                found.doctest_globs.push(under(path[..at].trim_end_matches('/'), "*.md"));
            }
            match ext {
                "rs" => found.included.extend(rust_includes(&path, dir, content, &manifests)),
                "go" => found.included.extend(go_embeds(dir, content)),
                "ex" | "exs" => {
                    let root = nearest_dir_with(&path, "mix.exs", &manifests).unwrap_or_default();
                    found.included.extend(call_paths(content, "doctest_file").filter_map(|p| join(&root, &p)));
                }
                "py" => found.included.extend(call_paths(content, "doctest.testfile").filter_map(|p| join(dir, &p))),
                _ => {}
            }
        }
        found.doctest_globs.sort();
        found.doctest_globs.dedup();
        found.included.sort();
        found.included.dedup();
        found
    }
}

/// Whether `path` configures how the repository runs: its automation,
/// build, checks or dependencies. Only these may name a `--doctest-glob`.
fn runs_things(path: &str) -> bool {
    use HighImpactKind as K;
    matches!(classify_path(path), PathClass::HighImpact(K::Automation | K::CheckConfiguration | K::Dependencies))
}

/// `rel` under `dir`, or `rel` alone at the root.
fn under(dir: &str, rel: &str) -> String {
    if dir.is_empty() { rel.to_owned() } else { format!("{dir}/{rel}") }
}

/// `rel` resolved against `dir`; `None` when it leaves the repository.
fn join(dir: &str, rel: &str) -> Option<String> {
    let mut out: Vec<&str> = if rel.starts_with('/') { vec![] } else { dir.split('/').collect() };
    for segment in rel.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                out.retain(|s| !s.is_empty());
                out.pop()?;
            }
            s => out.push(s),
        }
    }
    out.retain(|s| !s.is_empty());
    Some(out.join("/"))
}

/// The directory of the nearest `manifest` at or above `path`'s directory.
fn nearest_dir_with(path: &str, manifest: &str, files: &[String]) -> Option<String> {
    let mut dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    loop {
        if files.iter().any(|f| f.eq_ignore_ascii_case(&under(dir, manifest))) {
            return Some(dir.to_owned());
        }
        dir = dir.rsplit_once('/').map(|(d, _)| d).or((!dir.is_empty()).then_some(""))?;
    }
}

/// Every value of `flag` in `content`: `--flag=v`, `--flag v`, `"--flag", "v"`,
/// each unquoted.
fn flag_values<'a>(content: &'a str, flag: &'a str) -> impl Iterator<Item = String> + 'a {
    content.match_indices(flag).filter_map(move |(at, _)| {
        let rest = &content[at + flag.len()..];
        if rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return None;
        }
        let rest = rest.trim_start_matches(['=', ',', '"', '\'', ' ']);
        let value: String = rest.chars().take_while(|c| !c.is_whitespace() && !"\"',]".contains(*c)).collect();
        (!value.is_empty()).then_some(value)
    })
}

/// The string value of `key = "v"` or `key: v` in a TOML or YAML file.
fn toml_string(content: &str, key: &str) -> Option<String> {
    content.lines().find_map(|line| {
        let rest = line.trim().strip_prefix(key)?.trim_start().strip_prefix(['=', ':'])?;
        let value = rest.trim().trim_matches(['"', '\'']);
        (!value.is_empty()).then(|| value.trim_end_matches('/').to_owned())
    })
}

/// The first string literal of every `name(...)` or `name "..."` call.
fn call_paths<'a>(content: &'a str, name: &'a str) -> impl Iterator<Item = String> + 'a {
    content.match_indices(name).filter_map(move |(at, _)| {
        let before = content[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let rest = content[at + name.len()..].trim_start();
        // `name("a.md", ...)` up to its `)`; `name "a.md"` up to the line's end.
        let args = match rest.strip_prefix('(') {
            Some(args) => args.split(')').next(),
            None => rest.lines().next(),
        };
        string_literals(args.unwrap_or_default()).next()
    })
}

/// The contents of the `"..."` and `'...'` literals in `text`, in order.
fn string_literals(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut rest = text;
    std::iter::from_fn(move || {
        let start = rest.find(['"', '\''])?;
        let quote = rest[start..].chars().next()?;
        let body = &rest[start + 1..];
        let end = body.find(quote)?;
        rest = &body[end + 1..];
        Some(body[..end].to_owned())
    })
}

/// What a Rust file includes: `include_str!`, `include_bytes!` and
/// `include!` targets, relative to the file, or to the crate root after
/// `env!("CARGO_MANIFEST_DIR")`. `OUT_DIR` paths are build output.
fn rust_includes(path: &str, dir: &str, content: &str, files: &[String]) -> Vec<String> {
    let mut found = vec![];
    for (at, _) in content.match_indices("include") {
        let rest = &content[at + "include".len()..];
        let Some(args) = ["_str!", "_bytes!", "!"].iter().find_map(|m| rest.strip_prefix(m)) else { continue };
        let Some(args) = bracketed(args.trim_start()) else { continue };
        if args.contains("OUT_DIR") {
            continue;
        }
        let Some(literal) = string_literals(args).filter(|s| s != "CARGO_MANIFEST_DIR").last() else { continue };
        let base = if args.contains("CARGO_MANIFEST_DIR") {
            nearest_dir_with(path, "cargo.toml", files).unwrap_or_else(|| crate_root_guess(dir))
        } else {
            dir.to_owned()
        };
        found.extend(join(&base, literal.trim_start_matches('/')));
    }
    found
}

/// The text inside the bracket that opens `s`, up to its match, string
/// literals skipped; `None` when `s` opens none or it never closes.
fn bracketed(s: &str) -> Option<&str> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in s.char_indices() {
        if in_string {
            (escaped, in_string) = (!escaped && c == '\\', in_string && (escaped || c != '"'));
            continue;
        }
        match c {
            '(' | '[' | '{' => depth += 1,
            _ if depth == 0 => return None,
            '"' => in_string = true,
            ')' | ']' | '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(&s[1..i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// The crate root of a file when no `Cargo.toml` was given: what precedes
/// its `src/` (or the root).
fn crate_root_guess(dir: &str) -> String {
    match dir.rsplit_once("/src") {
        Some((root, tail)) if tail.is_empty() || tail.starts_with('/') => root.to_owned(),
        _ if dir == "src" || dir.starts_with("src/") => String::new(),
        _ => dir.to_owned(),
    }
}

/// The patterns of every `//go:embed` line, relative to the file.
fn go_embeds(dir: &str, content: &str) -> Vec<String> {
    content
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("//go:embed"))
        .flat_map(|patterns| patterns.split_whitespace().map(|p| p.trim_matches(['"', '`'])))
        .filter_map(|p| join(dir, p.strip_prefix("all:").unwrap_or(p)))
        .collect()
}

/// `fnmatch`-style matching with `*` (any run, `/` included), `?` and
/// `[...]` / `[!...]`, in linear time: an untrusted glob cannot stall a run.
pub(super) fn matches(glob: &str, text: &str) -> bool {
    let (glob, text) = (glob.as_bytes(), text.as_bytes());
    let (mut g, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if g < glob.len() && glob[g] == b'*' {
            star = Some((g, t));
            g += 1;
        } else if let Some(next) = (g < glob.len()).then(|| one(glob, g, text[t])).flatten() {
            g = next;
            t += 1;
        } else if let Some((sg, st)) = star {
            g = sg + 1;
            t = st + 1;
            star = Some((sg, st + 1));
        } else {
            return false;
        }
    }
    glob[g..].iter().all(|&c| c == b'*')
}

/// Whether the glob item at `g` matches `c`, and where the next item starts.
fn one(glob: &[u8], g: usize, c: u8) -> Option<usize> {
    match glob[g] {
        b'?' => Some(g + 1),
        // An unclosed `[` is a literal, as in `fnmatch`.
        b'[' if glob.len() < g + 3 || !glob[g + 2..].contains(&b']') => (c == b'[').then_some(g + 1),
        b'[' => {
            let close = glob[g + 2..].iter().position(|&b| b == b']').map(|i| g + 2 + i)?;
            let (negate, set) = match glob[g + 1] {
                b'!' | b'^' => (true, &glob[g + 2..close]),
                _ => (false, &glob[g + 1..close]),
            };
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == b'-' {
                    hit |= (set[i]..=set[i + 2]).contains(&c);
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            (hit != negate).then_some(close + 1)
        }
        literal => (literal == c).then_some(g + 1),
    }
}

#[cfg(test)]
#[path = "doc_use_tests.rs"]
mod tests;
