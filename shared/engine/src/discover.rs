//! Which checks a repository runs when its policy lists none: the
//! repository's own tooling, found from its files (no shell, argv only).

/// Manifests whose contents discovery reads (at most these, in one batch).
pub(crate) const MANIFESTS: &[&str] = &["package.json"];

/// The default checks for a checkout holding `files`, with `package_json`
/// the contents of a root `package.json` when there is one.
pub fn default_checks(files: &[String], package_json: Option<&str>) -> Vec<Vec<String>> {
    let has = |name: &str| files.iter().any(|f| f == name);
    let argv = |parts: &[&str]| parts.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
    let mut checks = Vec::new();
    if has("Cargo.toml") {
        checks.push(argv(&["cargo", "test", "--locked"]));
    }
    if let Some(json) = package_json {
        let runner = if has("pnpm-lock.yaml") {
            "pnpm"
        } else if has("yarn.lock") {
            "yarn"
        } else if has("bun.lockb") || has("bun.lock") {
            "bun"
        } else {
            "npm"
        };
        let scripts = agent_zero_codecs::json::from_str::<serde_json::Value>(json)
            .ok()
            .and_then(|v| v.get("scripts").and_then(|s| s.as_object()).map(|s| s.keys().cloned().collect::<Vec<_>>()))
            .unwrap_or_default();
        for script in ["lint", "typecheck", "test", "build"] {
            if scripts.iter().any(|s| s == script) {
                checks.push(argv(&[runner, "run", script]));
            }
        }
    }
    if has("go.mod") {
        checks.push(argv(&["go", "test", "./..."]));
    }
    if checks.is_empty() && (has("pyproject.toml") || has("setup.py")) {
        checks.push(argv(&["python", "-m", "pytest"]));
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn discovers_native_tooling() {
        let checks = default_checks(&files(&["Cargo.toml", "src/lib.rs"]), None);
        assert_eq!(checks, [["cargo", "test", "--locked"]]);
        let json = r#"{"scripts":{"test":"vitest","build":"tsc","start":"node ."}}"#;
        let checks = default_checks(&files(&["package.json", "pnpm-lock.yaml"]), Some(json));
        assert_eq!(checks, [["pnpm", "run", "test"], ["pnpm", "run", "build"]]);
        assert!(default_checks(&files(&["README.md"]), None).is_empty());
        assert!(default_checks(&files(&["package.json"]), Some("not json")).is_empty());
    }
}
