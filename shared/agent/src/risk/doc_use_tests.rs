use super::*;

fn from(files: &[(&str, &str)]) -> DocUse {
    DocUse::from_files(files)
}

#[test]
fn doctest_globs_come_from_the_files_that_configure_runs() {
    let pyproject = "[tool.pytest.ini_options]\naddopts = [\"--doctest-glob\", \"*.md\", \"-ra\"]\n";
    assert_eq!(from(&[("pyproject.toml", pyproject)]).doctest_globs, ["*.md", "test*.txt"]);
    let setup_cfg = "[tool:pytest]\naddopts = --doctest-glob='*.rst' --doctest-modules\n";
    assert_eq!(from(&[("setup.cfg", setup_cfg)]).doctest_globs, ["*.rst", "test*.txt"]);
    let tox = "[testenv]\ncommands = pytest --doctest-glob=README.md {posargs}\n";
    assert_eq!(from(&[("tox.ini", tox)]).doctest_globs, ["README.md"]);
    let workflow = "      - run: pytest --doctest-glob \"docs/*.rst\"\n";
    assert_eq!(from(&[(".github/workflows/ci.yml", workflow)]).doctest_globs, ["docs/*.rst"]);
    // `doctest_optionflags` and a bare `pytest.ini` mean pytest runs, with its default glob.
    assert_eq!(from(&[("pytest.ini", "[pytest]\ndoctest_optionflags = ELLIPSIS\n")]).doctest_globs, ["test*.txt"]);
    // Prose and source that only mention the flag name nothing.
    let prose = "Run `pytest --doctest-glob=\"*.md\"` to check the examples.\n";
    assert_eq!(from(&[("docs/testing.md", prose), ("CONTRIBUTING.md", prose)]), DocUse::default());
    assert_eq!(from(&[("tox.ini", "commands = pytest --doctest-globs-are-not-a-flag\n")]), DocUse::default());
}

#[test]
fn documentation_builders_that_run_their_pages() {
    let conf = "extensions = [\"sphinx.ext.autodoc\", \"sphinx.ext.doctest\"]\n";
    let sphinx = from(&[("docs/conf.py", conf)]);
    assert!(sphinx.names("docs/usage/quickstart.rst") && sphinx.names("docs/index.md"), "{sphinx:?}");
    assert!(!sphinx.names("README.rst") && !sphinx.names("docs/_static/logo.png"));
    assert_eq!(from(&[("docs/conf.py", "extensions = [\"sphinx.ext.autodoc\"]\n")]), DocUse::default());
    let book = from(&[("guide/book.toml", "[book]\ntitle = \"Guide\"\nsrc = \"pages\"\n")]);
    assert!(book.names("guide/pages/ch01.md") && !book.names("guide/README.md"), "{book:?}");
    assert!(from(&[("mkdocs.yml", "plugins:\n  - markdown-exec\n")]).names("docs/index.md"));
    assert!(from(&[("site/.vitepress/config.mts", "")]).names("site/guide/start.md"));
}

#[test]
fn rust_includes_resolve_against_the_file_or_the_crate() {
    // The string after the macro is not one of its arguments.
    let lib = "#![doc = include_str!(\"../README.md\")]\nconst NAME: &str = \"other.md\";\n\
               const HELP: &str = include_str!(\"help/usage.txt\");\n\
               static LOGO: &[u8] = include_bytes!(\"../assets/logo.png\");\n";
    let found = from(&[("crates/cli/src/lib.rs", lib)]);
    assert_eq!(found.included, ["crates/cli/README.md", "crates/cli/assets/logo.png", "crates/cli/src/help/usage.txt"]);
    // Paths keep their case; a manifest is found whatever its spelling.
    let upper = "include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/Guide.md\"))";
    let found = from(&[("Crates/CLI/src/lib.rs", upper), ("Crates/CLI/CARGO.TOML", "")]);
    assert_eq!(found.included, ["Crates/CLI/Guide.md"]);
    assert!(found.names("crates/cli/guide.md"));
    let manifest_dir = "#![doc = include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/README.md\"))]\n";
    let found = from(&[("crates/cli/src/bin/main.rs", manifest_dir), ("crates/cli/Cargo.toml", "")]);
    assert_eq!(found.included, ["crates/cli/README.md"]);
    // Without the manifest, the crate root is what precedes `src/`.
    assert_eq!(from(&[("crates/cli/src/bin/main.rs", manifest_dir)]).included, ["crates/cli/README.md"]);
    let generated = "include!(concat!(env!(\"OUT_DIR\"), \"/bindings.rs\"));\n";
    assert_eq!(from(&[("src/lib.rs", generated)]), DocUse::default());
    // A path that climbs out of the repository names nothing in it.
    assert_eq!(from(&[("src/lib.rs", "include_str!(\"../../outside.md\");")]), DocUse::default());
}

#[test]
fn embeds_and_doctest_files_of_other_languages() {
    let go = "package web\n\nimport \"embed\"\n\n//go:embed templates/*.html README.md\nvar files embed.FS\n\
              //go:embed all:static\nvar static embed.FS\n";
    let found = from(&[("internal/web/web.go", go)]);
    assert!(found.names("internal/web/README.md") && found.names("internal/web/templates/index.html"));
    assert!(found.names("internal/web/static/css/site.css"), "a directory names its files: {found:?}");
    assert!(!found.names("internal/web/web_test.go") && !found.names("README.md"));
    let exunit = "defmodule AppTest do\n  use ExUnit.Case\n  doctest_file \"README.md\"\nend\n";
    let found = from(&[("apps/app/test/app_test.exs", exunit), ("apps/app/mix.exs", "")]);
    assert_eq!(found.included, ["apps/app/README.md"]);
    let python = "import doctest\n\ndoctest.testfile(\"../docs/usage.txt\")\n";
    assert_eq!(from(&[("tests/test_docs.py", python)]).included, ["docs/usage.txt"]);
}

#[test]
fn only_evidence_files_are_read() {
    for path in ["pyproject.toml", "docs/conf.py", "src/lib.rs", "cmd/main.go", "test/app_test.exs", "tox.ini"] {
        assert!(DocUse::is_evidence(path), "{path}");
    }
    for path in ["README.md", "docs/guide.rst", "static/app.css", "notes.txt"] {
        assert!(!DocUse::is_evidence(path), "{path}");
    }
}

#[test]
fn globs_match_as_fnmatch_does() {
    for (glob, text, want) in [
        ("*.md", "readme.md", true),
        ("*.md", "docs/a/b.md", true),
        ("test*.txt", "testing.txt", true),
        ("test*.txt", "notes.txt", false),
        ("doc?.rst", "docs.rst", true),
        ("[!_]*.md", "_draft.md", false),
        ("[!_]*.md", "guide.md", true),
        ("[a-c]*", "beta", true),
        ("[a-c]*", "delta", false),
        ("[unclosed", "[unclosed", true),
        ("", "", true),
        ("*", "", true),
    ] {
        assert_eq!(matches(glob, text), want, "{glob} ~ {text}");
    }
    // Linear time: an untrusted glob with many stars cannot stall a run.
    let glob = "*a".repeat(40) + "b";
    assert!(!matches(&glob, &"a".repeat(20_000)));
}
