//! The change-risk rules over paths drawn from real repositories
//! (`fixtures/risk_paths.tsv`, each row with its source) and over the
//! documentation use real repositories declare.

use std::collections::BTreeSet;

use agent_zero_agent::risk::{DocUse, HighImpactKind, PathClass, classify_path, classify_path_in};

const TABLE: &str = include_str!("fixtures/risk_paths.tsv");

/// `mechanical`, `behavioral` or `high-impact:<kind>`, as the table spells them.
fn class_name(class: PathClass) -> String {
    match class {
        PathClass::Inert => "mechanical".into(),
        PathClass::Executable => "behavioral".into(),
        PathClass::HighImpact(kind) => {
            let mut name = String::from("high-impact:");
            for (i, c) in format!("{kind:?}").chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    name.push('-');
                }
                name.push(c.to_ascii_lowercase());
            }
            name
        }
        other => format!("{other:?}"),
    }
}

#[test]
fn every_real_path_earns_its_class() {
    let mut rows = 0;
    let mut sources = BTreeSet::new();
    let mut classes = BTreeSet::new();
    let mut wrong = vec![];
    for (n, line) in TABLE.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let [path, want, source] = fields[..] else { panic!("line {}: want 3 tab-separated fields: {line}", n + 1) };
        let (repository, commit) = source.split_once('@').expect("source is owner/repo@commit");
        assert!(repository.contains('/') && commit.len() == 40, "line {}: source {source}", n + 1);
        let got = class_name(classify_path(path));
        if got != want {
            wrong.push(format!("line {}: {path} ({repository}): got {got}, want {want}", n + 1));
        }
        rows += 1;
        sources.insert(repository);
        classes.insert(want);
    }
    assert!(wrong.is_empty(), "{} of {rows} rows differ:\n{}", wrong.len(), wrong.join("\n"));
    assert!(rows >= 300, "{rows} rows");
    assert!(sources.len() >= 15, "{sources:?}");
    for class in ["mechanical", "behavioral", "high-impact:agent-instructions", "high-impact:tool-configuration"] {
        assert!(classes.contains(class), "no row is {class}");
    }
}

fn executed(doc_use: &DocUse, path: &str) -> bool {
    classify_path_in(path, doc_use) == PathClass::HighImpact(HighImpactKind::ExecutedDocumentation)
}

/// tokio-rs/tokio@ea91b33ca57ff0581b38e735cc108f831bccbdaa runs its README's
/// examples as doctests of `tests-integration`.
#[test]
fn tokio_doctests_its_readme() {
    let lib = "#[cfg(feature = \"full\")]\ndoc_comment::doc_comment!(include_str!(\"../../README.md\"));\n";
    let doc_use = DocUse::from_files(&[("tests-integration/src/lib.rs", lib), ("tests-integration/Cargo.toml", "")]);
    assert!(executed(&doc_use, "README.md"), "{doc_use:?}");
    // The crates' own READMEs are not included anywhere: still mechanical.
    assert_eq!(classify_path_in("tokio/README.md", &doc_use), PathClass::Inert);
    assert_eq!(classify_path_in("docs/contributing/README.md", &doc_use), PathClass::Inert);
}

/// denoland/deno@98f9507affc905f088124891add3a8dd63b91f77 makes two READMEs
/// the rustdoc (and doctests) of its `ops` macros.
#[test]
fn deno_documents_its_macros_with_readmes() {
    let lib = "// Copyright 2018-2026 the Deno authors. MIT license.\n\n#![doc = include_str!(\"README.md\")]\n\
               #![deny(clippy::unnecessary_wraps)]\n\n/// A macro designed to provide an extremely fast V8->Rust \
               interface layer.\n#[doc = include_str!(\"op2/README.md\")]\n#[proc_macro_attribute]\n";
    let doc_use = DocUse::from_files(&[("libs/ops/lib.rs", lib)]);
    assert!(executed(&doc_use, "libs/ops/README.md") && executed(&doc_use, "libs/ops/op2/README.md"), "{doc_use:?}");
    assert_eq!(classify_path_in("doc/testing.md", &doc_use), PathClass::Inert);
    assert_eq!(classify_path_in("README.md", &doc_use), PathClass::Inert);
}

/// woodpecker-ci/woodpecker@a4cb541b82dea1967d5b5577ff80a472b349afb2 builds
/// its documentation with Docusaurus, which compiles Markdown as MDX.
#[test]
fn woodpecker_docs_are_compiled_by_docusaurus() {
    let doc_use = DocUse::from_files(&[("docs/docusaurus.config.ts", "")]);
    assert!(executed(&doc_use, "docs/docs/20-usage/10-intro.md"));
    assert!(executed(&doc_use, "docs/blog/2023-12-12-podman-image-builds/index.md"));
    assert_eq!(classify_path_in("docs/README.md", &doc_use), PathClass::Inert);
    assert_eq!(classify_path_in("CHANGELOG.md", &doc_use), PathClass::Inert);
}

/// pytest-dev/pytest@df87db7b0462fb764ef73fa00561adf8ad047572: a pytest
/// configuration collects `test*.txt` as doctests; a page that only
/// mentions `--doctest-glob` names nothing.
#[test]
fn pytest_configuration_collects_text_doctests() {
    let ini = "[pytest]\n# just defined to prevent the root level tox.ini from kicking in\n";
    let how_to = "    pytest --doctest-glob=\"*.rst\"\n";
    let doc_use = DocUse::from_files(&[("doc/en/pytest.ini", ini), ("doc/en/how-to/doctest.rst", how_to)]);
    assert_eq!(doc_use.doctest_globs, ["test*.txt"]);
    assert!(executed(&doc_use, "doc/en/example/testing.txt"));
    assert_eq!(classify_path_in("doc/en/how-to/doctest.rst", &doc_use), PathClass::Inert);
}
