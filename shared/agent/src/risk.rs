//! Change risk from the paths a change writes, never from the model's word.
//!
//! The model proposes a `changeRisk`; it is untrusted output, so the write
//! authorisation uses [`classify_change_risk`]: the higher of the model's
//! class and the class the paths themselves earn. The paths can raise the
//! risk, never lower it.
//!
//! | what the path is | class | why |
//! |---|---|---|
//! | repository policy (`.agent-zero.yml`, `CODEOWNERS`, `.gitmodules`, `.gitattributes`) | `high-impact` | it decides what a run may do |
//! | CI and automation (`.github/`, `.gitlab-ci.yml`, `.circleci/`, `Jenkinsfile`, ...) | `high-impact` | it runs with the repository's secrets |
//! | migrations and schemas (`migrations/`, `db/migrate/`, `schema/`, `schema.rb`, `*.sql`, `*.prisma`, `*.proto`) | `high-impact` | data outlives the change |
//! | dependency manifests and lockfiles (every ecosystem) | `high-impact` | supply chain, and they hold the check scripts |
//! | check and build configuration (`Makefile`, `tox.ini`, `conftest.py`, `jest.config.*`, ...) | `high-impact` | it defines what "verified" means |
//! | tests (`tests/`, `__tests__/`, `*.test.*`, `*_test.go`, `test_*.py`, `*_spec.rb`, ...) | `high-impact` | a change must not rewrite the checks it is judged by |
//! | documentation, text and images (`*.md`, `*.txt`, `LICENSE`, `*.png`, ...) | `mechanical` | not executable |
//! | anything else | `behavioral` | executable until shown otherwise |
//!
//! Names are compared case-insensitively and `\` is read as `/`, so no
//! spelling of a path lowers its class.

use agent_zero_contracts::ChangeRisk;

/// Why a path is `high-impact`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HighImpactKind {
    /// `.agent-zero.yml` and the files that govern the repository.
    RepositoryPolicy,
    /// CI and automation definitions.
    Automation,
    /// Database migrations and data schemas.
    MigrationOrSchema,
    /// A dependency manifest or lockfile.
    Dependencies,
    /// Configuration of the checks or the build.
    CheckConfiguration,
    /// A test.
    Test,
}

impl HighImpactKind {
    /// What the kind is, for evidence.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::RepositoryPolicy => "repository policy",
            Self::Automation => "CI or automation",
            Self::MigrationOrSchema => "a migration or schema",
            Self::Dependencies => "a dependency manifest or lockfile",
            Self::CheckConfiguration => "check or build configuration",
            Self::Test => "a test",
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
    /// Documentation, text or images: may stay `mechanical`.
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

/// Repository policy files, by lowercased file name anywhere.
const POLICY_NAMES: &[&str] = &[".agent-zero.yml", ".agent-zero.yaml", "codeowners", ".gitmodules", ".gitattributes"];

/// CI and automation, by lowercased file name anywhere.
const AUTOMATION_NAMES: &[&str] = &[
    ".gitlab-ci.yml",
    ".travis.yml",
    "jenkinsfile",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    "appveyor.yml",
    ".appveyor.yml",
    "cloudbuild.yaml",
    "cloudbuild.yml",
    ".pre-commit-config.yaml",
    ".drone.yml",
    "codecov.yml",
    ".codecov.yml",
];

/// CI and automation, by lowercased directory name anywhere in the path.
const AUTOMATION_DIRS: &[&str] = &[".github", ".circleci", ".buildkite", ".gitlab", ".husky", ".devcontainer"];

/// Migrations and schemas, by lowercased directory name.
const SCHEMA_DIRS: &[&str] = &["migrations", "migration", "migrate", "schema", "schemas", "alembic", "prisma"];

/// Migrations and schemas, by lowercased extension.
const SCHEMA_EXTENSIONS: &[&str] = &["sql", "prisma", "proto", "avsc", "graphql", "gql"];

/// Dependency manifests and lockfiles, by lowercased file name.
const DEPENDENCY_NAMES: &[&str] = &[
    // Rust
    "cargo.toml",
    "cargo.lock",
    "rust-toolchain",
    "rust-toolchain.toml",
    // JavaScript and TypeScript
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "pnpm-workspace.yaml",
    "yarn.lock",
    ".yarnrc",
    ".yarnrc.yml",
    ".npmrc",
    "bun.lock",
    "bun.lockb",
    "deno.json",
    "deno.jsonc",
    "deno.lock",
    // Python
    "pyproject.toml",
    "requirements.txt",
    "pipfile",
    "pipfile.lock",
    "poetry.lock",
    "pdm.lock",
    "uv.lock",
    "setup.py",
    "setup.cfg",
    "environment.yml",
    // Go
    "go.mod",
    "go.sum",
    "go.work",
    "go.work.sum",
    // Ruby
    "gemfile",
    "gemfile.lock",
    // JVM
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "gradle.lockfile",
    "gradle.properties",
    "build.sbt",
    // PHP, Elixir, Erlang, Haskell, Dart, Swift, .NET, C/C++, Nix
    "composer.json",
    "composer.lock",
    "mix.exs",
    "mix.lock",
    "rebar.config",
    "rebar.lock",
    "stack.yaml",
    "cabal.project",
    "pubspec.yaml",
    "pubspec.lock",
    "package.swift",
    "package.resolved",
    "podfile",
    "podfile.lock",
    "cartfile",
    "cartfile.resolved",
    "packages.config",
    "directory.packages.props",
    "directory.build.props",
    "global.json",
    "nuget.config",
    "packages.lock.json",
    "paket.dependencies",
    "paket.lock",
    "vcpkg.json",
    "conanfile.txt",
    "conanfile.py",
    "flake.nix",
    "flake.lock",
];

/// Dependency manifests, by lowercased extension.
const DEPENDENCY_EXTENSIONS: &[&str] = &["gemspec", "csproj", "fsproj", "vbproj", "cabal", "nuspec"];

/// Check and build configuration, by lowercased file name.
const CHECK_NAMES: &[&str] = &[
    "makefile",
    "gnumakefile",
    "justfile",
    "taskfile.yml",
    "rakefile",
    "tox.ini",
    "noxfile.py",
    "pytest.ini",
    "conftest.py",
    ".coveragerc",
    "build.rs",
    "cmakelists.txt",
    "meson.build",
    "build.bazel",
    "workspace",
    "workspace.bazel",
    "module.bazel",
    ".bazelrc",
    "dockerfile",
    "docker-compose.yml",
    "docker-compose.yaml",
    "compose.yml",
    "compose.yaml",
];

/// Check configuration, by lowercased file-name prefix (`jest.config.ts`).
const CHECK_PREFIXES: &[&str] = &[
    "jest.config.",
    "vitest.config.",
    "vitest.workspace.",
    "karma.conf.",
    "playwright.config.",
    "cypress.config.",
    ".mocharc",
    "babel.config.",
    ".babelrc",
    "tsconfig",
    "webpack.config.",
    "vite.config.",
    "rollup.config.",
    "eslint.config.",
    ".eslintrc",
];

/// Check configuration, by lowercased directory name.
const CHECK_DIRS: &[&str] = &[".cargo", ".config", "gradle", ".mvn"];

/// Test directories, by lowercased directory name.
const TEST_DIRS: &[&str] =
    &["test", "tests", "__tests__", "spec", "specs", "testdata", "fixtures", "__snapshots__", "e2e"];

/// Inert files, by lowercased extension.
const INERT_EXTENSIONS: &[&str] = &[
    "md", "markdown", "mdx", "rst", "txt", "adoc", "asciidoc", "org", "tex", "rtf", "png", "jpg", "jpeg", "gif",
    "webp", "ico", "bmp", "tif", "tiff", "pdf", "svg",
];

/// Inert files without an extension, by lowercased name.
const INERT_NAMES: &[&str] =
    &["license", "licence", "copying", "authors", "contributors", "changelog", "changes", "notice", "readme"];

/// The class `path` earns on its own.
pub fn classify_path(path: &str) -> PathClass {
    let lower = path.replace('\\', "/").to_ascii_lowercase();
    let lower = lower.trim_start_matches("./");
    let mut segments: Vec<&str> = lower.split('/').filter(|s| !s.is_empty() && *s != ".").collect();
    let name = segments.pop().unwrap_or_default();
    let dirs = segments;
    // `.npmrc` has no extension: its stem would be empty.
    let extension = name.rsplit_once('.').filter(|(stem, _)| !stem.is_empty());
    let ext = extension.map_or("", |(_, ext)| ext);
    let in_dir = |names: &[&str]| dirs.iter().any(|d| names.contains(d));

    use HighImpactKind as K;
    if POLICY_NAMES.contains(&name) {
        return PathClass::HighImpact(K::RepositoryPolicy);
    }
    if in_dir(AUTOMATION_DIRS) || AUTOMATION_NAMES.contains(&name) {
        return PathClass::HighImpact(K::Automation);
    }
    if is_dependency_file(name, ext, &dirs) {
        return PathClass::HighImpact(K::Dependencies);
    }
    if in_dir(SCHEMA_DIRS) || SCHEMA_EXTENSIONS.contains(&ext) || name == "schema.rb" {
        return PathClass::HighImpact(K::MigrationOrSchema);
    }
    if CHECK_NAMES.contains(&name) || CHECK_PREFIXES.iter().any(|p| name.starts_with(p)) || in_dir(CHECK_DIRS) {
        return PathClass::HighImpact(K::CheckConfiguration);
    }
    if in_dir(TEST_DIRS) || is_test_name(name) {
        return PathClass::HighImpact(K::Test);
    }
    let stem = extension.map_or(name, |(stem, _)| stem);
    if INERT_EXTENSIONS.contains(&ext) || (ext.is_empty() || ext == "md") && INERT_NAMES.contains(&stem) {
        return PathClass::Inert;
    }
    PathClass::Executable
}

fn is_dependency_file(name: &str, ext: &str, dirs: &[&str]) -> bool {
    DEPENDENCY_NAMES.contains(&name)
        || DEPENDENCY_EXTENSIONS.contains(&ext)
        // requirements-dev.txt, requirements/base.txt, constraints.txt
        || (name.starts_with("requirements") && ext == "txt")
        || (name.starts_with("constraints") && ext == "txt")
        || (dirs.last() == Some(&"requirements") && ext == "txt")
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

/// The risk a change to `paths` carries: the model's `declared` class,
/// raised to the highest floor of any path. Never lower than `declared`.
pub fn classify_change_risk<S: AsRef<str>>(declared: ChangeRisk, paths: &[S]) -> RiskAssessment {
    let mut risk = declared;
    let mut high_impact = None;
    for path in paths {
        let class = classify_path(path.as_ref());
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
