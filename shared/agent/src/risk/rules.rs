//! The rules behind [`classify_path`](super::classify_path), in the order
//! they are tried: the first rule a path meets decides its class. The
//! names each rule looks for are in `names.rs`; the path is lowercased
//! before it gets here.

use super::names::*;
use super::{HighImpactKind as K, PathClass};

/// The class a normalised path earns from its name alone: `dirs` are its
/// directories, `name` its file name, all lowercased.
pub(super) fn classify(dirs: &[&str], name: &str) -> PathClass {
    // `.npmrc` has no extension: its stem would be empty.
    let (stem, ext) = name.rsplit_once('.').filter(|(stem, _)| !stem.is_empty()).unwrap_or((name, ""));
    let in_dir = |names: &[&str]| dirs.iter().any(|d| names.contains(d));
    let kind = if POLICY_NAMES.contains(&name) {
        K::RepositoryPolicy
    } else if AGENT_NAMES.contains(&name) || in_dir(AGENT_DIRS) || AGENT_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        K::AgentInstructions
    } else if in_dir(AUTOMATION_DIRS)
        || AUTOMATION_NAMES.contains(&name)
        || AUTOMATION_PREFIXES.iter().any(|p| name.starts_with(p))
    {
        K::Automation
    } else if is_dependency_file(dirs, name, ext) {
        K::Dependencies
    } else if in_dir(SCHEMA_DIRS) || SCHEMA_EXTENSIONS.contains(&ext) || name == "schema.rb" {
        K::MigrationOrSchema
    } else if CHECK_NAMES.contains(&name)
        || CHECK_PREFIXES.iter().any(|p| name.starts_with(p))
        || CHECK_EXTENSIONS.contains(&ext)
        || name.ends_with(".gradle.kts")
        // `BUILD.root`, `build.sh`, `build.zig`, Ant's `build.xml`
        || name.split('.').next() == Some("build")
        || in_dir(CHECK_DIRS)
        || dirs.iter().any(|d| d.starts_with("xtask-"))
    {
        K::CheckConfiguration
    } else if dirs.iter().any(|d| is_test_dir(d)) || ext == "snap" || is_test_name(name) {
        K::Test
    } else if is_tool_configuration(dirs, name, stem, ext) {
        K::ToolConfiguration
    } else if is_inert(dirs, name, stem, ext) {
        return PathClass::Inert;
    } else {
        return PathClass::Executable;
    };
    PathClass::HighImpact(kind)
}

fn is_dependency_file(dirs: &[&str], name: &str, ext: &str) -> bool {
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    // Any lockfile: `*.lock`, `deno.lock.json`, `devcontainer-lock.json`.
    let lockfile = matches!(ext, "lock" | "lockb")
        || ((stem.ends_with(".lock") || stem.ends_with("-lock")) && matches!(ext, "json" | "yaml" | "yml" | "toml"));
    lockfile
        || DEPENDENCY_NAMES.contains(&name)
        || DEPENDENCY_EXTENSIONS.contains(&ext)
        || dirs.iter().any(|d| DEPENDENCY_DIRS.contains(d))
        // requirements-dev.txt, dev-requirements.in, requirements/base.txt, constraints.txt
        || (matches!(ext, "txt" | "in") && (name.contains("requirements") || name.starts_with("constraints")))
        || (dirs.last() == Some(&"requirements") && matches!(ext, "txt" | "in"))
}

/// Test directories: the named ones, test-only crates and packages
/// (`tests-integration`, `integration_test`) and Playwright's `*-snapshots`.
fn is_test_dir(dir: &str) -> bool {
    TEST_DIRS.contains(&dir)
        || ["tests-", "test-", "test_", "tests_"].iter().any(|p| dir.starts_with(p))
        || ["_test", "_tests", "-test", "-tests", "-snapshots"].iter().any(|s| dir.ends_with(s))
}

/// Test files by name: `*.test.*`, `*.spec.*`, `test_*.py`, `*_test.*`,
/// `*_spec.rb`, `*Test.java` / `*Tests.cs` (lowercased: `*test.java`).
fn is_test_name(name: &str) -> bool {
    let Some((stem, ext)) = name.rsplit_once('.') else { return false };
    stem.ends_with(".test")
        || stem.ends_with(".spec")
        || stem.contains(".test.")
        || stem.contains(".spec.")
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || stem == "test"
        || stem == "tests"
        || (matches!(ext, "java" | "kt" | "kts" | "scala" | "cs" | "fs" | "vb" | "swift" | "php" | "groovy")
            && (stem.ends_with("test") || stem.ends_with("tests") || stem.ends_with("spec")))
}

/// Editor tasks, environment, `*.config.*` and `*rc` files, and every
/// dotfile or dot-directory not known to be plain: risk by default.
fn is_tool_configuration(dirs: &[&str], name: &str, stem: &str, ext: &str) -> bool {
    let parts: Vec<&str> = name.split('.').collect();
    // `next.config.mjs`, `karma.conf.js`: code a tool loads and runs.
    let config_part = parts.len() > 2 && parts[1..parts.len() - 1].iter().any(|p| matches!(*p, "config" | "conf"));
    let rc = stem.len() > 3 && stem.ends_with("rc") && RC_EXTENSIONS.contains(&ext);
    let dotfile = name.starts_with('.') && !PLAIN_DOTFILES.contains(&name) && !INERT_DOTFILES.contains(&name);
    // `..` starts with a dot too: a path that climbs is never lowered.
    TOOL_NAMES.contains(&name)
        || TOOL_EXTENSIONS.contains(&ext)
        || config_part
        || rc
        || dotfile
        || dirs.iter().any(|d| d.starts_with('.'))
}

/// The short list of what may stay `mechanical`: raster images, a few
/// dotfiles nothing reads as code, and prose where documentation lives.
fn is_inert(dirs: &[&str], name: &str, stem: &str, ext: &str) -> bool {
    IMAGE_EXTENSIONS.contains(&ext) || INERT_DOTFILES.contains(&name) || is_documentation(dirs, stem, ext)
}

/// Prose in a documentation directory; prose at the repository root other
/// than `*.txt` (root `*.txt` files are often read by tools: `runtime.txt`,
/// `requirements.txt`); and the usual documentation files anywhere, with a
/// prose extension or none (`LICENSE`, `CHANGELOG.md`, `MIT-LICENSE`,
/// `README.ja.md`).
fn is_documentation(dirs: &[&str], stem: &str, ext: &str) -> bool {
    let prose = PROSE_EXTENSIONS.contains(&ext);
    // `README.zh-CN.md` is a README too.
    let base = stem.split('.').next().unwrap_or(stem);
    let doc_stem = DOC_STEMS.contains(&base)
        || ["license", "licence", "copying", "copyright"].iter().any(|p| base.starts_with(p))
        || base.ends_with("-license");
    (prose && dirs.iter().any(|d| DOC_DIRS.contains(d)))
        || (prose && ext != "txt" && dirs.is_empty())
        || ((prose || ext.is_empty()) && doc_stem)
}
