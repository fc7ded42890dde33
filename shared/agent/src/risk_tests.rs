use agent_zero_contracts::ChangeRisk;

use super::*;

fn risk(declared: ChangeRisk, paths: &[&str]) -> ChangeRisk {
    classify_change_risk(declared, paths).risk
}

#[test]
fn the_classification_table() {
    use HighImpactKind as K;
    let table: &[(&str, PathClass)] = &[
        // Repository policy.
        (".agent-zero.yml", PathClass::HighImpact(K::RepositoryPolicy)),
        (".agent-zero.yaml", PathClass::HighImpact(K::RepositoryPolicy)),
        ("sub/.Agent-Zero.YML", PathClass::HighImpact(K::RepositoryPolicy)),
        ("docs/CODEOWNERS", PathClass::HighImpact(K::RepositoryPolicy)),
        (".gitmodules", PathClass::HighImpact(K::RepositoryPolicy)),
        // CI.
        (".github/workflows/ci.yml", PathClass::HighImpact(K::Automation)),
        (".GitHub/Workflows/release.yaml", PathClass::HighImpact(K::Automation)),
        (".github/dependabot.yml", PathClass::HighImpact(K::Automation)),
        (".gitlab-ci.yml", PathClass::HighImpact(K::Automation)),
        (".circleci/config.yml", PathClass::HighImpact(K::Automation)),
        ("Jenkinsfile", PathClass::HighImpact(K::Automation)),
        // CI of every forge, hooks and deploy previews run in the base repository.
        (".gitea/workflows/ci.yml", PathClass::HighImpact(K::Automation)),
        (".forgejo/workflows/test.yaml", PathClass::HighImpact(K::Automation)),
        (".woodpecker.yml", PathClass::HighImpact(K::Automation)),
        (".woodpecker/test.yaml", PathClass::HighImpact(K::Automation)),
        (".drone.yml", PathClass::HighImpact(K::Automation)),
        ("azure-pipelines.yml", PathClass::HighImpact(K::Automation)),
        ("bitbucket-pipelines.yml", PathClass::HighImpact(K::Automation)),
        (".buildkite/pipeline.yml", PathClass::HighImpact(K::Automation)),
        (".tekton/pull-request.yaml", PathClass::HighImpact(K::Automation)),
        (".cirrus.yml", PathClass::HighImpact(K::Automation)),
        (".semaphore/semaphore.yml", PathClass::HighImpact(K::Automation)),
        ("Dangerfile", PathClass::HighImpact(K::Automation)),
        ("actions/setup/action.yml", PathClass::HighImpact(K::Automation)),
        (".husky/pre-commit", PathClass::HighImpact(K::Automation)),
        ("lefthook.yml", PathClass::HighImpact(K::Automation)),
        (".lintstagedrc.json", PathClass::HighImpact(K::Automation)),
        (".pre-commit-config.yaml", PathClass::HighImpact(K::Automation)),
        ("netlify.toml", PathClass::HighImpact(K::Automation)),
        ("vercel.json", PathClass::HighImpact(K::Automation)),
        ("render.yaml", PathClass::HighImpact(K::Automation)),
        ("fly.toml", PathClass::HighImpact(K::Automation)),
        ("Procfile", PathClass::HighImpact(K::Automation)),
        ("railway.json", PathClass::HighImpact(K::Automation)),
        (".platform.app.yaml", PathClass::HighImpact(K::Automation)),
        ("firebase.json", PathClass::HighImpact(K::Automation)),
        ("amplify.yml", PathClass::HighImpact(K::Automation)),
        ("wrangler.toml", PathClass::HighImpact(K::Automation)),
        (".devcontainer/devcontainer.json", PathClass::HighImpact(K::Automation)),
        // Developers' coding agents obey these.
        ("AGENTS.md", PathClass::HighImpact(K::AgentInstructions)),
        ("CLAUDE.md", PathClass::HighImpact(K::AgentInstructions)),
        ("packages/web/AGENTS.md", PathClass::HighImpact(K::AgentInstructions)),
        ("GEMINI.md", PathClass::HighImpact(K::AgentInstructions)),
        (".cursorrules", PathClass::HighImpact(K::AgentInstructions)),
        (".cursor/rules/style.mdc", PathClass::HighImpact(K::AgentInstructions)),
        (".windsurfrules", PathClass::HighImpact(K::AgentInstructions)),
        (".clinerules", PathClass::HighImpact(K::AgentInstructions)),
        (".github/copilot-instructions.md", PathClass::HighImpact(K::AgentInstructions)),
        (".github/prompts/review.prompt.md", PathClass::HighImpact(K::AgentInstructions)),
        (".claude/settings.json", PathClass::HighImpact(K::AgentInstructions)),
        (".mcp.json", PathClass::HighImpact(K::AgentInstructions)),
        // Migrations and schemas.
        ("db/migrate/20240101_add_users.rb", PathClass::HighImpact(K::MigrationOrSchema)),
        ("migrations/0001_init.py", PathClass::HighImpact(K::MigrationOrSchema)),
        ("app/schema/user.json", PathClass::HighImpact(K::MigrationOrSchema)),
        ("db/schema.rb", PathClass::HighImpact(K::MigrationOrSchema)),
        ("sql/seed.sql", PathClass::HighImpact(K::MigrationOrSchema)),
        ("prisma/schema.prisma", PathClass::HighImpact(K::MigrationOrSchema)),
        ("api/service.proto", PathClass::HighImpact(K::MigrationOrSchema)),
        // Dependency manifests and lockfiles, every ecosystem.
        ("Cargo.toml", PathClass::HighImpact(K::Dependencies)),
        ("crates/core/Cargo.toml", PathClass::HighImpact(K::Dependencies)),
        ("Cargo.lock", PathClass::HighImpact(K::Dependencies)),
        ("package.json", PathClass::HighImpact(K::Dependencies)),
        ("web/package-lock.json", PathClass::HighImpact(K::Dependencies)),
        ("pnpm-lock.yaml", PathClass::HighImpact(K::Dependencies)),
        ("yarn.lock", PathClass::HighImpact(K::Dependencies)),
        ("bun.lockb", PathClass::HighImpact(K::Dependencies)),
        (".npmrc", PathClass::HighImpact(K::Dependencies)),
        ("pyproject.toml", PathClass::HighImpact(K::Dependencies)),
        ("requirements.txt", PathClass::HighImpact(K::Dependencies)),
        ("requirements-dev.txt", PathClass::HighImpact(K::Dependencies)),
        ("requirements/base.txt", PathClass::HighImpact(K::Dependencies)),
        ("poetry.lock", PathClass::HighImpact(K::Dependencies)),
        ("uv.lock", PathClass::HighImpact(K::Dependencies)),
        ("Pipfile.lock", PathClass::HighImpact(K::Dependencies)),
        ("setup.py", PathClass::HighImpact(K::Dependencies)),
        ("go.mod", PathClass::HighImpact(K::Dependencies)),
        ("go.sum", PathClass::HighImpact(K::Dependencies)),
        ("Gemfile", PathClass::HighImpact(K::Dependencies)),
        ("Gemfile.lock", PathClass::HighImpact(K::Dependencies)),
        ("widgets.gemspec", PathClass::HighImpact(K::Dependencies)),
        ("pom.xml", PathClass::HighImpact(K::Dependencies)),
        ("build.gradle", PathClass::HighImpact(K::Dependencies)),
        ("app/build.gradle.kts", PathClass::HighImpact(K::Dependencies)),
        ("composer.lock", PathClass::HighImpact(K::Dependencies)),
        ("mix.lock", PathClass::HighImpact(K::Dependencies)),
        ("src/App/App.csproj", PathClass::HighImpact(K::Dependencies)),
        ("flake.lock", PathClass::HighImpact(K::Dependencies)),
        // Install hooks and vendored code run on install.
        (".pnpmfile.cjs", PathClass::HighImpact(K::Dependencies)),
        (".yarn/releases/yarn-4.5.0.cjs", PathClass::HighImpact(K::Dependencies)),
        (".yarn/plugins/@yarnpkg/plugin-version.cjs", PathClass::HighImpact(K::Dependencies)),
        ("dev-requirements.in", PathClass::HighImpact(K::Dependencies)),
        ("vendor/github.com/pkg/errors/errors.go", PathClass::HighImpact(K::Dependencies)),
        // What defines the checks.
        ("Makefile", PathClass::HighImpact(K::CheckConfiguration)),
        ("tox.ini", PathClass::HighImpact(K::CheckConfiguration)),
        ("conftest.py", PathClass::HighImpact(K::CheckConfiguration)),
        ("jest.config.ts", PathClass::HighImpact(K::CheckConfiguration)),
        ("vitest.config.mts", PathClass::HighImpact(K::CheckConfiguration)),
        ("build.rs", PathClass::HighImpact(K::CheckConfiguration)),
        (".cargo/config.toml", PathClass::HighImpact(K::CheckConfiguration)),
        // Wrappers download and run the build tool; build logic is code.
        ("gradlew", PathClass::HighImpact(K::CheckConfiguration)),
        ("gradlew.bat", PathClass::HighImpact(K::CheckConfiguration)),
        ("gradle/wrapper/gradle-wrapper.properties", PathClass::HighImpact(K::CheckConfiguration)),
        ("mvnw", PathClass::HighImpact(K::CheckConfiguration)),
        (".mvn/wrapper/maven-wrapper.properties", PathClass::HighImpact(K::CheckConfiguration)),
        ("tools/defs.bzl", PathClass::HighImpact(K::CheckConfiguration)),
        ("BUILD", PathClass::HighImpact(K::CheckConfiguration)),
        ("pkg/BUILD.bazel", PathClass::HighImpact(K::CheckConfiguration)),
        ("cmake/FindFoo.cmake", PathClass::HighImpact(K::CheckConfiguration)),
        ("rules.mk", PathClass::HighImpact(K::CheckConfiguration)),
        ("Rakefile", PathClass::HighImpact(K::CheckConfiguration)),
        ("lib/tasks/db.rake", PathClass::HighImpact(K::CheckConfiguration)),
        ("Dockerfile.dev", PathClass::HighImpact(K::CheckConfiguration)),
        (".eslintrc.json", PathClass::HighImpact(K::CheckConfiguration)),
        // Tests.
        ("tests/test_calc.py", PathClass::HighImpact(K::Test)),
        ("test_calc.py", PathClass::HighImpact(K::Test)),
        ("calc_test.py", PathClass::HighImpact(K::Test)),
        ("pkg/parse_test.go", PathClass::HighImpact(K::Test)),
        ("src/user.test.ts", PathClass::HighImpact(K::Test)),
        ("src/user.spec.tsx", PathClass::HighImpact(K::Test)),
        ("src/__tests__/user.js", PathClass::HighImpact(K::Test)),
        ("spec/models/user_spec.rb", PathClass::HighImpact(K::Test)),
        ("src/test/java/com/acme/UserTest.java", PathClass::HighImpact(K::Test)),
        ("crates/core/tests/parse.rs", PathClass::HighImpact(K::Test)),
        ("src/snapshots/app__render.snap", PathClass::HighImpact(K::Test)),
        ("e2e/home.spec.ts-snapshots/home-chromium.png", PathClass::HighImpact(K::Test)),
        // Editor tasks, environment, tool configuration, unknown dotfiles.
        (".vscode/tasks.json", PathClass::HighImpact(K::ToolConfiguration)),
        (".vscode/launch.json", PathClass::HighImpact(K::ToolConfiguration)),
        (".idea/runConfigurations/App.xml", PathClass::HighImpact(K::ToolConfiguration)),
        ("app.code-workspace", PathClass::HighImpact(K::ToolConfiguration)),
        (".envrc", PathClass::HighImpact(K::ToolConfiguration)),
        (".env.production", PathClass::HighImpact(K::ToolConfiguration)),
        (".tool-versions", PathClass::HighImpact(K::ToolConfiguration)),
        ("mise.toml", PathClass::HighImpact(K::ToolConfiguration)),
        (".nvmrc", PathClass::HighImpact(K::ToolConfiguration)),
        ("next.config.mjs", PathClass::HighImpact(K::ToolConfiguration)),
        ("tailwind.config.ts", PathClass::HighImpact(K::ToolConfiguration)),
        ("pylintrc", PathClass::HighImpact(K::CheckConfiguration)),
        ("dotfiles/vimrc", PathClass::HighImpact(K::ToolConfiguration)),
        (".somenewtoolrc", PathClass::HighImpact(K::ToolConfiguration)),
        (".storybook/main.ts", PathClass::HighImpact(K::ToolConfiguration)),
        ("docs/.vitepress/config.ts", PathClass::HighImpact(K::ToolConfiguration)),
        (".changeset/brave-lions.md", PathClass::HighImpact(K::ToolConfiguration)),
        // Executable source: at least behavioral.
        ("calc.py", PathClass::Executable),
        ("src/lib.rs", PathClass::Executable),
        ("src/schema_cache.rs", PathClass::Executable),
        ("web/app.tsx", PathClass::Executable),
        ("bin/deploy", PathClass::Executable),
        ("scripts/release.sh", PathClass::Executable),
        ("config/settings.yaml", PathClass::Executable),
        ("static/site.css", PathClass::Executable),
        ("contest.py", PathClass::Executable),
        // Risk by default: prose outside the documentation places is read by
        // something until shown otherwise. `notes.txt` was `mechanical`
        // under the old deny-list; a root `*.txt` is often read by a tool.
        ("notes.txt", PathClass::Executable),
        ("src/help.md", PathClass::Executable),
        ("docs/intro.mdx", PathClass::Executable),
        ("img/logo.svg", PathClass::Executable),
        (".gitignore", PathClass::Executable),
        (".editorconfig", PathClass::Executable),
        // Inert: the short list nothing runs (while no `DocUse` names it).
        ("README.md", PathClass::Inert),
        ("crates/core/README.md", PathClass::Inert),
        ("README.ja.md", PathClass::Inert),
        ("docs/guide.rst", PathClass::Inert),
        ("doc/api/index.txt", PathClass::Inert),
        ("LICENSE", PathClass::Inert),
        ("LICENSE-MIT", PathClass::Inert),
        ("MIT-LICENSE", PathClass::Inert),
        ("CHANGELOG.md", PathClass::Inert),
        ("ROADMAP.md", PathClass::Inert),
        ("img/logo.png", PathClass::Inert),
        (".mailmap", PathClass::Inert),
    ];
    let wrong: Vec<String> = table
        .iter()
        .filter(|(path, want)| classify_path(path) != *want)
        .map(|(path, want)| format!("{path}: got {:?}, want {want:?}", classify_path(path)))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn documentation_the_repository_runs_is_high_impact() {
    let doc_use = DocUse { included: vec!["README.md".into()], doctest_globs: vec!["*.rst".into()] };
    let executed = PathClass::HighImpact(HighImpactKind::ExecutedDocumentation);
    assert_eq!(classify_path_in("README.md", &doc_use), executed);
    assert_eq!(classify_path_in("docs/guide.rst", &doc_use), executed);
    assert_eq!(classify_path_in("docs/guide.md", &doc_use), PathClass::Inert);
    // Another kind keeps its own reason.
    assert_eq!(classify_path_in("tests/data.rst", &doc_use), PathClass::HighImpact(HighImpactKind::Test));
    let assessed = classify_change_risk_in(ChangeRisk::Mechanical, &["docs/guide.md", "README.md"], &doc_use);
    assert_eq!(assessed.risk, ChangeRisk::HighImpact);
    assert_eq!(assessed.high_impact, Some(("README.md".to_owned(), HighImpactKind::ExecutedDocumentation)));
    assert_eq!(HighImpactKind::ExecutedDocumentation.describe(), "documentation the repository runs or compiles in");
    // Without evidence, `classify_change_risk` is the empty `DocUse`.
    for paths in [&["README.md"][..], &["docs/a.md", "src/lib.rs"], &[".vscode/tasks.json"]] {
        assert_eq!(
            classify_change_risk(ChangeRisk::Mechanical, paths),
            classify_change_risk_in(ChangeRisk::Mechanical, paths, &DocUse::default())
        );
    }
}

#[test]
fn paths_raise_the_declared_risk() {
    assert_eq!(risk(ChangeRisk::Mechanical, &["calc.py"]), ChangeRisk::Behavioral);
    assert_eq!(risk(ChangeRisk::Mechanical, &["README.md", "src/lib.rs"]), ChangeRisk::Behavioral);
    for path in [".github/workflows/ci.yml", ".agent-zero.yml", "tests/test_calc.py", "Cargo.lock", "package.json"] {
        assert_eq!(risk(ChangeRisk::Mechanical, &["README.md", path]), ChangeRisk::HighImpact, "{path}");
        assert_eq!(risk(ChangeRisk::Behavioral, &[path]), ChangeRisk::HighImpact, "{path}");
    }
}

#[test]
fn paths_never_lower_the_declared_risk() {
    assert_eq!(risk(ChangeRisk::HighImpact, &["README.md"]), ChangeRisk::HighImpact);
    assert_eq!(risk(ChangeRisk::Behavioral, &["README.md"]), ChangeRisk::Behavioral);
    assert_eq!(risk(ChangeRisk::Mechanical, &["README.md", "docs/a.md"]), ChangeRisk::Mechanical);
    assert_eq!(risk(ChangeRisk::Behavioral, &[] as &[&str]), ChangeRisk::Behavioral);
}

#[test]
fn no_spelling_of_a_path_lowers_its_class() {
    for path in [
        ".github\\workflows\\ci.yml",
        "./.github/workflows/ci.yml",
        ".//.github//workflows/ci.yml",
        "./tests/../tests/test_calc.py",
        "TESTS/Test_Calc.PY",
        "CARGO.LOCK",
        // A path that climbs is classed by its `..`, never lowered to the docs it names.
        "docs/../README.md",
        "Docs\\..\\notes.md",
        ".GitHub/Copilot-Instructions.MD",
    ] {
        assert_eq!(risk(ChangeRisk::Mechanical, &[path]), ChangeRisk::HighImpact, "{path}");
    }
}

#[test]
fn the_first_high_impact_path_is_named() {
    let assessed = classify_change_risk(ChangeRisk::Mechanical, &["README.md", "Cargo.lock", ".github/ci.yml"]);
    assert_eq!(assessed.high_impact, Some(("Cargo.lock".to_owned(), HighImpactKind::Dependencies)));
    assert_eq!(HighImpactKind::Dependencies.describe(), "a dependency manifest or lockfile");
    assert_eq!(classify_change_risk(ChangeRisk::HighImpact, &["README.md"]).high_impact, None);
}
