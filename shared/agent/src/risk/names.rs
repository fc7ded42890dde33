//! The names, directories and extensions each rule of
//! [`classify_path`](super::classify_path) looks for, all lowercased;
//! `rules.rs` holds the order the rules are tried in.

/// Repository policy, by file name anywhere. Prow's `OWNERS` decides who
/// approves, as `CODEOWNERS` does on GitHub.
pub(super) const POLICY_NAMES: &[&str] =
    &[".agent-zero.yml", ".agent-zero.yaml", "codeowners", "owners", "owners_aliases", ".gitmodules", ".gitattributes"];

/// Instructions a developer's coding agent reads and obeys, by file name anywhere.
pub(super) const AGENT_NAMES: &[&str] = &[
    "agents.md",
    "agents.override.md",
    "agent.md",
    "claude.md",
    "claude.local.md",
    "gemini.md",
    "warp.md",
    "copilot-instructions.md",
    ".cursorrules",
    ".cursorignore",
    ".windsurfrules",
    ".clinerules",
    ".roorules",
    ".goosehints",
    ".rules",
    ".aider.conf.yml",
    ".mcp.json",
    "opencode.json",
];

/// Agent instructions, by directory name anywhere (`.cursor/rules/*.mdc`,
/// `.claude/settings.json` whose hooks run commands).
pub(super) const AGENT_DIRS: &[&str] = &[
    ".cursor",
    ".claude",
    ".gemini",
    ".windsurf",
    ".clinerules",
    ".roo",
    ".kiro",
    ".junie",
    ".continue",
    ".amazonq",
    ".codex",
    ".opencode",
    ".augment",
];

/// Agent instructions, by file-name suffix anywhere: VS Code's prompt,
/// instruction, chat-mode and agent files (`.github/prompts/*.prompt.md`).
pub(super) const AGENT_SUFFIXES: &[&str] = &[".instructions.md", ".prompt.md", ".chatmode.md", ".agent.md"];

/// CI of every forge, git hooks, dev containers and deployment, by
/// directory name anywhere: the base repository runs them with its secrets.
pub(super) const AUTOMATION_DIRS: &[&str] = &[
    ".github",
    ".gitea",
    ".forgejo",
    ".gitlab",
    ".circleci",
    ".buildkite",
    ".woodpecker",
    ".tekton",
    ".semaphore",
    ".drone",
    ".azure-pipelines",
    "azure-pipelines",
    ".azuredevops",
    ".teamcity",
    ".ci",
    "ci",
    ".husky",
    ".githooks",
    ".devcontainer",
    ".platform",
    ".netlify",
    ".vercel",
];

/// CI, hooks, bots and deploy previews, by file name anywhere.
pub(super) const AUTOMATION_NAMES: &[&str] = &[
    // CI
    ".gitlab-ci.yml",
    ".gitlab-ci.yaml",
    ".travis.yml",
    "azure-pipelines.yml",
    "azure-pipelines.yaml",
    "bitbucket-pipelines.yml",
    "appveyor.yml",
    ".appveyor.yml",
    "cloudbuild.yaml",
    "cloudbuild.yml",
    "buildspec.yml",
    ".drone.yml",
    ".drone.yaml",
    ".drone.star",
    ".woodpecker.yml",
    ".woodpecker.yaml",
    ".cirrus.yml",
    ".cirrus.star",
    "codemagic.yaml",
    "bitrise.yml",
    ".gitpod.yml",
    // Read the Docs builds every pull request with the repository's settings.
    ".readthedocs.yaml",
    ".readthedocs.yml",
    "readthedocs.yml",
    "codecov.yml",
    "codecov.yaml",
    ".codecov.yml",
    // A composite or JavaScript action runs wherever a workflow uses it.
    "action.yml",
    "action.yaml",
    // Git hooks
    ".pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
    "lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yml",
    "lefthook-local.yml",
    // Bots that open, merge or release
    "renovate.json",
    "renovate.json5",
    ".mergify.yml",
    "bors.toml",
    "release-please-config.json",
    // Deploy previews and hosting: built and run on every pushed branch
    "netlify.toml",
    "vercel.json",
    "now.json",
    "render.yaml",
    "fly.toml",
    "app.json",
    "app.yaml",
    "procfile",
    "heroku.yml",
    "runtime.txt",
    "railway.json",
    "railway.toml",
    ".platform.app.yaml",
    "firebase.json",
    "amplify.yml",
    "wrangler.toml",
    "wrangler.json",
    "wrangler.jsonc",
    "spin.toml",
    "serverless.yml",
    "serverless.yaml",
    "_redirects",
    "_headers",
];

/// Automation, by file-name prefix (`Jenkinsfile.release`, `dangerfile.ts`,
/// the pre-commit hook's `.lintstagedrc.js`).
pub(super) const AUTOMATION_PREFIXES: &[&str] = &["jenkinsfile", "dangerfile", ".lintstagedrc", "lint-staged.config."];

/// Dependency manifests, lockfiles and package-manager configuration, by
/// file name anywhere.
pub(super) const DEPENDENCY_NAMES: &[&str] = &[
    // Rust
    "cargo.toml",
    "cargo.lock",
    "rust-toolchain",
    "rust-toolchain.toml",
    // JavaScript and TypeScript; `.pnpmfile.cjs` runs on every install
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "pnpm-workspace.yaml",
    ".pnpmfile.cjs",
    ".pnpmfile.mjs",
    "pnpmfile.js",
    "yarn.lock",
    ".yarnrc",
    ".yarnrc.yml",
    ".npmrc",
    "bun.lock",
    "bun.lockb",
    "bunfig.toml",
    ".bunfig.toml",
    "deno.json",
    "deno.jsonc",
    "deno.lock",
    "import_map.json",
    // Python
    "pyproject.toml",
    "pipfile",
    "pipfile.lock",
    "poetry.lock",
    "pdm.lock",
    "uv.lock",
    "pixi.toml",
    "pixi.lock",
    "setup.py",
    "setup.cfg",
    "environment.yml",
    "environment.yaml",
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
    // PHP, Elixir, Erlang, Haskell, Dart, Swift, .NET, C/C++, Nix, R, Perl, Homebrew
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
    "directory.build.targets",
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
    "module.bazel.lock",
    "renv.lock",
    "cpanfile",
    "brewfile",
    "brewfile.lock.json",
];

/// Dependency manifests, by extension.
pub(super) const DEPENDENCY_EXTENSIONS: &[&str] = &["gemspec", "csproj", "fsproj", "vbproj", "cabal", "nuspec", "opam"];

/// Vendored dependencies and package-manager state, by directory name
/// anywhere (`.yarn/releases/yarn-4.cjs` and `.yarn/plugins/*` run on install).
pub(super) const DEPENDENCY_DIRS: &[&str] =
    &[".yarn", "vendor", "third_party", "third-party", "node_modules", "bower_components"];

/// Migrations and schemas, by directory name.
pub(super) const SCHEMA_DIRS: &[&str] =
    &["migrations", "migration", "migrate", "schema", "schemas", "alembic", "prisma"];

/// Migrations and schemas, by extension.
pub(super) const SCHEMA_EXTENSIONS: &[&str] = &["sql", "prisma", "proto", "avsc", "graphql", "gql"];

/// Build logic, wrappers, containers and check configuration, by file name.
pub(super) const CHECK_NAMES: &[&str] = &[
    // Build logic and the wrappers that download the build tool
    "build.rs",
    "gradlew",
    "gradlew.bat",
    "mvnw",
    "mvnw.cmd",
    "gnumakefile",
    "justfile",
    ".justfile",
    "taskfile.yml",
    "taskfile.yaml",
    "rakefile",
    "configure",
    "configure.ac",
    "cmakelists.txt",
    "meson.build",
    "meson_options.txt",
    "meson.options",
    "build",
    "workspace",
    ".bazelrc",
    ".bazelversion",
    "earthfile",
    "tiltfile",
    "cross.toml",
    // Containers
    "containerfile",
    "compose.yml",
    "compose.yaml",
    "devcontainer.json",
    // Test runners, linters and formatters: what "verified" means
    "tox.ini",
    "noxfile.py",
    "pytest.ini",
    "conftest.py",
    ".coveragerc",
    "mypy.ini",
    "ruff.toml",
    "pyrightconfig.json",
    "phpunit.xml",
    "phpunit.xml.dist",
    "psalm.xml",
    "rector.php",
    "pint.json",
    "rustfmt.toml",
    ".rustfmt.toml",
    "clippy.toml",
    ".clippy.toml",
    "deny.toml",
    "typos.toml",
    "_typos.toml",
    "spellcheck.toml",
    "biome.json",
    "biome.jsonc",
    "dprint.json",
    ".dprint.json",
    "turbo.json",
    "nx.json",
    "lerna.json",
    "checkmake.ini",
];

/// Check and build configuration, by file-name prefix (`jest.config.ts`,
/// `Dockerfile.dev`, `Makefile.am`, `phpstan.neon.dist`).
pub(super) const CHECK_PREFIXES: &[&str] = &[
    "makefile",
    "dockerfile",
    "docker-compose",
    "jest.config.",
    "vitest.config.",
    "vitest.workspace.",
    "karma.conf.",
    "playwright.config.",
    "cypress.config.",
    "babel.config.",
    "tsconfig",
    "webpack.config.",
    "vite.config.",
    "rollup.config.",
    "eslint.config.",
    "prettier.config.",
    "stylelint.config.",
    "phpstan",
    // Linters, formatters and scanners, and what they ignore
    ".eslintrc",
    ".eslintignore",
    ".prettierrc",
    ".prettierignore",
    ".stylelintrc",
    ".babelrc",
    ".mocharc",
    ".nycrc",
    ".golangci",
    ".rubocop",
    ".swiftlint",
    ".flake8",
    ".pylintrc",
    "pylintrc",
    ".php-cs-fixer",
    ".styleci",
    ".markdownlint",
    ".yamllint",
    ".hadolint",
    ".shellcheckrc",
    ".cspell",
    "cspell.",
    ".trivyignore",
    ".gitleaks",
    ".secrets.baseline",
    ".semgrep",
    ".snyk",
];

/// Build logic, by extension (`*.bzl`, `*.cmake`, `*.mk`, `lib/tasks/*.rake`).
pub(super) const CHECK_EXTENSIONS: &[&str] = &["bzl", "bazel", "cmake", "mk", "mak", "gradle", "rake", "dockerfile"];

/// Build logic and check configuration, by directory name (`gradle/wrapper/`,
/// `.mvn/wrapper/`, Gradle's `buildSrc/`, `cargo xtask`; also `xtask-*`).
pub(super) const CHECK_DIRS: &[&str] = &[".cargo", ".config", "gradle", ".mvn", "buildsrc", "build-logic", "xtask"];

/// Test directories, by directory name.
pub(super) const TEST_DIRS: &[&str] = &[
    "test",
    "tests",
    "testing",
    "__tests__",
    "spec",
    "specs",
    "testdata",
    "fixtures",
    "__fixtures__",
    "__mocks__",
    "__snapshots__",
    "__screenshots__",
    "__image_snapshots__",
    "snapshots",
    "e2e",
];

/// Tool, editor and environment configuration that is not a dotfile, by
/// file name (`.envrc`, `.tool-versions`, `.vscode/` are dotfiles).
pub(super) const TOOL_NAMES: &[&str] =
    &["mise.toml", "shell.nix", "default.nix", "devbox.json", "devenv.nix", "devenv.yaml"];

/// Tool configuration, by extension: workspaces can define tasks.
pub(super) const TOOL_EXTENSIONS: &[&str] = &["code-workspace", "sublime-project"];

/// Extensions an `*rc` configuration file may have (`pylintrc`, `.swcrc.json`).
pub(super) const RC_EXTENSIONS: &[&str] = &["", "js", "cjs", "mjs", "ts", "json", "json5", "yml", "yaml", "toml"];

/// Dotfiles that run nothing but steer which files tools see or how they are
/// formatted: executable (`behavioral`), not high-impact.
pub(super) const PLAIN_DOTFILES: &[&str] = &[".gitignore", ".dockerignore", ".editorconfig"];

/// Dotfiles nothing reads as code: `mechanical`.
pub(super) const INERT_DOTFILES: &[&str] = &[".mailmap", ".git-blame-ignore-revs", ".gitkeep", ".keep"];

/// Prose extensions: `mechanical` only where documentation lives (`rules::is_documentation`).
/// MDX is absent on purpose: it is JSX and imports code when a site builds.
pub(super) const PROSE_EXTENSIONS: &[&str] = &["md", "markdown", "rst", "adoc", "asciidoc", "txt"];

/// Documentation directories, by name anywhere.
pub(super) const DOC_DIRS: &[&str] = &["docs", "doc", "documentation"];

/// Documentation, by file stem anywhere, with a prose extension or none.
pub(super) const DOC_STEMS: &[&str] = &[
    "readme",
    "changelog",
    "changes",
    "history",
    "news",
    "releases",
    "contributing",
    "code_of_conduct",
    "code-of-conduct",
    "conduct",
    "security",
    "support",
    "governance",
    "roadmap",
    "authors",
    "contributors",
    "maintainers",
    "notice",
    "patents",
    "citation",
];

/// Raster images: `mechanical` anywhere no earlier rule claims them. SVG is
/// absent on purpose: it can carry script that runs when it is served.
pub(super) const IMAGE_EXTENSIONS: &[&str] =
    &["png", "jpg", "jpeg", "gif", "webp", "avif", "ico", "bmp", "tif", "tiff"];
