//! Change risk from the paths a change writes, never from the model's word.
//!
//! The model proposes a `changeRisk`; it is untrusted output, so the write
//! authorisation uses [`classify_change_risk_in`]: the higher of the
//! model's class and the class the paths themselves earn. The paths can
//! raise the risk, never lower it.
//!
//! Risk by default: publication pushes a branch into the base repository,
//! where `pull_request` workflows, deploy previews, install hooks and
//! developers' editors and coding agents run what it holds. So a path is
//! `mechanical` only when it is on a short list of documentation that
//! nothing runs, and everything not known to be plain is at least
//! `behavioral`. Rules are tried in this order; the first that matches
//! decides (full name lists: `risk/names.rs`):
//!
//! | # | what the path is | class | why |
//! |---|---|---|---|
//! | 1 | repository policy (`.agent-zero.yml`, `CODEOWNERS`, `OWNERS`, `.gitmodules`, `.gitattributes`) | `high-impact` | it decides what a run may do and who approves |
//! | 2 | agent instructions (`AGENTS.md`, `CLAUDE.md`, `GEMINI.md`, `.cursorrules`, `.windsurfrules`, `.clinerules`, `.github/copilot-instructions.md`, `*.prompt.md`, `.mcp.json`, anything under `.cursor/`, `.claude/`, `.gemini/`, `.windsurf/`, ...) | `high-impact` | developers' coding agents obey them |
//! | 3 | CI of every forge (`.github/`, `.gitea/`, `.forgejo/`, `.gitlab-ci.yml`, `.woodpecker/`, `.woodpecker.yml`, `.drone.yml`, `azure-pipelines.yml`, `azure-pipelines/`, `bitbucket-pipelines.yml`, `.buildkite/`, `.circleci/`, `.travis.yml`, `Jenkinsfile*`, `.tekton/`, `.cirrus.yml`, `.semaphore/`, `ci/`), `action.yml`, `Dangerfile*`, git hooks (`.husky/`, `lefthook.yml`, `.pre-commit-config.yaml`, `.lintstagedrc*`), dev containers, bots (`renovate.json`, `.mergify.yml`), Read the Docs and deploy previews (`netlify.toml`, `vercel.json`, `render.yaml`, `fly.toml`, `app.json`, `Procfile`, `railway.json`, `.platform.app.yaml`, `firebase.json`, `amplify.yml`, `wrangler.toml`, `spin.toml`) | `high-impact` | the base repository runs it with its secrets |
//! | 4 | dependency manifests, lockfiles (`*.lock`, `*-lock.json`, ...) and package-manager configuration of every ecosystem, install hooks (`.pnpmfile.cjs`, `.yarn/`), vendored code (`vendor/`, `third_party/`, `node_modules/`) | `high-impact` | supply chain; install runs them |
//! | 5 | migrations and schemas (`migrations/`, `db/migrate/`, `schema/`, `schema.rb`, `*.sql`, `*.prisma`, `*.proto`) | `high-impact` | data outlives the change |
//! | 6 | build logic and wrappers (`Makefile*`, `*.mk`, `*.cmake`, `CMakeLists.txt`, `BUILD`, `BUILD.bazel`, `*.bzl`, `WORKSPACE`, `build.*`, `build.rs`, `Rakefile`, `*.rake`, `gradlew`, `gradle/`, `buildSrc/`, `mvnw`, `.mvn/`, `xtask*/`, `Dockerfile*`, compose files), and the configuration of test runners, linters, formatters and scanners (`tox.ini`, `conftest.py`, `jest.config.*`, `tsconfig*`, `.eslintrc*`, `.prettierrc*`, `.golangci*`, `.rubocop*`, `rustfmt.toml`, `clippy.toml`, `deny.toml`, `.gitleaks*`, ...) | `high-impact` | it defines what is built and what "verified" means |
//! | 7 | tests (`tests/`, `testing/`, `test-*/`, `*-tests/`, `integration_test/`, `__tests__/`, `__snapshots__/`, `*-snapshots/`, `*.snap`, `*.test.*`, `*_test.go`, `test_*.py`, `*_spec.rb`, `*Test.java`, ...) | `high-impact` | a change must not rewrite the checks it is judged by |
//! | 8 | tool, editor and environment configuration: `.vscode/`, `.idea/`, `.envrc`, `.env*`, `.tool-versions`, `mise.toml`, `*.code-workspace`, `*.config.*`, `*.conf.*`, `*rc`, and every other dotfile or path under a dot-directory (`..` included) | `high-impact` | tools run it on developers' machines; unknown means risky |
//! | 9 | documentation that [`DocUse`] says the repository runs or compiles in (pytest `--doctest-glob`, Sphinx `doctest`, `include_str!`, `//go:embed`, `mdbook`, Docusaurus MDX, ...) | `high-impact` | it is a test, or part of the program |
//! | 10 | raster images (`*.png`, `*.jpg`, `*.gif`, `*.webp`, `*.ico`, ...); `.mailmap`, `.git-blame-ignore-revs`, `.gitkeep`; prose (`*.md`, `*.markdown`, `*.rst`, `*.adoc`, `*.asciidoc`, `*.txt`) under `docs/`, `doc/` or `documentation/`; non-`*.txt` prose at the root; `README*`, `CHANGELOG*`, `LICENSE*`, `*-LICENSE`, `CONTRIBUTING*`, `AUTHORS*`, ... with a prose extension or none | `mechanical` | nothing runs it |
//! | 11 | anything else, including `.gitignore`, `.editorconfig`, `*.mdx`, `*.svg`, prose elsewhere | `behavioral` | executable until shown otherwise |
//!
//! Names are compared case-insensitively and `\` is read as `/`, so no
//! spelling of a path lowers its class. Tests inside source files are
//! found by [`has_inline_tests`] and [`touches_inline_tests`]; the caller
//! raises such a change to `HighImpact(Test)`.

use agent_zero_contracts::ChangeRisk;

mod doc_use;
mod inline_tests;
mod names;
mod rules;

pub use doc_use::DocUse;
pub use inline_tests::{has_inline_tests, inline_test_lines, touches_inline_tests};

/// Why a path is `high-impact`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HighImpactKind {
    /// `.agent-zero.yml` and the files that govern the repository.
    RepositoryPolicy,
    /// Instructions developers' coding agents read and obey.
    AgentInstructions,
    /// CI, hooks, bots and deployment definitions.
    Automation,
    /// Database migrations and data schemas.
    MigrationOrSchema,
    /// A dependency manifest, lockfile, package-manager hook or vendored code.
    Dependencies,
    /// Build logic or configuration of the checks.
    CheckConfiguration,
    /// A test.
    Test,
    /// Tool, editor or environment configuration, or an unknown dotfile.
    ToolConfiguration,
    /// Documentation the repository runs as a test or compiles in.
    ExecutedDocumentation,
}

impl HighImpactKind {
    /// What the kind is, for evidence.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::RepositoryPolicy => "repository policy",
            Self::AgentInstructions => "instructions for coding agents",
            Self::Automation => "CI, hooks or deployment",
            Self::MigrationOrSchema => "a migration or schema",
            Self::Dependencies => "a dependency manifest or lockfile",
            Self::CheckConfiguration => "check or build configuration",
            Self::Test => "a test",
            Self::ToolConfiguration => "tool, editor or environment configuration",
            Self::ExecutedDocumentation => "documentation the repository runs or compiles in",
        }
    }
}

/// The class one path earns on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathClass {
    /// Always needs a person.
    HighImpact(HighImpactKind),
    /// Executable (or not known to be inert): at least `behavioral`.
    Executable,
    /// Documentation or images nothing runs: may stay `mechanical`.
    Inert,
}

impl PathClass {
    /// The lowest change risk a change to such a path can have.
    pub const fn floor(self) -> ChangeRisk {
        match self {
            Self::HighImpact(_) => ChangeRisk::HighImpact,
            Self::Executable => ChangeRisk::Behavioral,
            Self::Inert => ChangeRisk::Mechanical,
        }
    }
}

/// The risk of a change and the path that set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RiskAssessment {
    /// The higher of the declared risk and every path's floor.
    pub risk: ChangeRisk,
    /// The first high-impact path and why, when one raised the risk.
    pub high_impact: Option<(String, HighImpactKind)>,
}

/// `path` with `\` read as `/` and empty and `.` segments dropped; its
/// case kept. `..` is kept too: a climbing path is classed by its
/// dot-directory.
fn clean(path: &str) -> String {
    let slashed = path.replace('\\', "/");
    let segments: Vec<&str> = slashed.split('/').filter(|s| !s.is_empty() && *s != ".").collect();
    segments.join("/")
}

/// `path` [`clean`]ed and lowercased, as every rule compares it.
fn normalize(path: &str) -> String {
    clean(path).to_ascii_lowercase()
}

/// The class `path` earns on its own, when no documentation is known to
/// be run or included (an empty [`DocUse`]).
pub fn classify_path(path: &str) -> PathClass {
    let path = normalize(path);
    let (dirs, name) =
        path.rsplit_once('/').map_or((vec![], path.as_str()), |(dirs, name)| (dirs.split('/').collect(), name));
    rules::classify(&dirs, name)
}

/// The class `path` earns in a repository whose documentation use is
/// `doc_use`: a path that is not otherwise high-impact and that the
/// repository runs or compiles in is `HighImpact(ExecutedDocumentation)`.
pub fn classify_path_in(path: &str, doc_use: &DocUse) -> PathClass {
    match classify_path(path) {
        PathClass::HighImpact(kind) => PathClass::HighImpact(kind),
        _ if doc_use.names(path) => PathClass::HighImpact(HighImpactKind::ExecutedDocumentation),
        class => class,
    }
}

/// The risk a change to `paths` carries: the model's `declared` class,
/// raised to the highest floor of any path. Never lower than `declared`.
/// The same as [`classify_change_risk_in`] with an empty [`DocUse`].
pub fn classify_change_risk<S: AsRef<str>>(declared: ChangeRisk, paths: &[S]) -> RiskAssessment {
    classify_change_risk_in(declared, paths, &DocUse::default())
}

/// The risk a change to `paths` carries in a repository whose
/// documentation use is `doc_use` (built by [`DocUse::from_files`]).
pub fn classify_change_risk_in<S: AsRef<str>>(declared: ChangeRisk, paths: &[S], doc_use: &DocUse) -> RiskAssessment {
    let mut risk = declared;
    let mut high_impact = None;
    for path in paths {
        let class = classify_path_in(path.as_ref(), doc_use);
        if let PathClass::HighImpact(kind) = class
            && high_impact.is_none()
        {
            high_impact = Some((path.as_ref().to_owned(), kind));
        }
        // `ChangeRisk` orders mechanical < behavioral < high-impact.
        risk = risk.max(class.floor());
    }
    RiskAssessment { risk, high_impact }
}

#[cfg(test)]
#[path = "risk_tests.rs"]
mod tests;
