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
        // What defines the checks.
        ("Makefile", PathClass::HighImpact(K::CheckConfiguration)),
        ("tox.ini", PathClass::HighImpact(K::CheckConfiguration)),
        ("conftest.py", PathClass::HighImpact(K::CheckConfiguration)),
        ("jest.config.ts", PathClass::HighImpact(K::CheckConfiguration)),
        ("vitest.config.mts", PathClass::HighImpact(K::CheckConfiguration)),
        ("build.rs", PathClass::HighImpact(K::CheckConfiguration)),
        (".cargo/config.toml", PathClass::HighImpact(K::CheckConfiguration)),
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
        // Inert.
        ("README.md", PathClass::Inert),
        ("docs/guide.rst", PathClass::Inert),
        ("LICENSE", PathClass::Inert),
        ("CHANGELOG.md", PathClass::Inert),
        ("notes.txt", PathClass::Inert),
        ("img/logo.png", PathClass::Inert),
    ];
    let wrong: Vec<String> = table
        .iter()
        .filter(|(path, want)| classify_path(path) != *want)
        .map(|(path, want)| format!("{path}: got {:?}, want {want:?}", classify_path(path)))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
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
