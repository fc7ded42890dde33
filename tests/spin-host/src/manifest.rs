//! The subset of Spin's manifest (v2) this host serves: the application's
//! variables, HTTP triggers, and each component's source, key-value stores,
//! allowed outbound hosts and variables.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Raw {
    spin_manifest_version: u32,
    #[serde(default)]
    variables: BTreeMap<String, RawVariable>,
    #[serde(default)]
    trigger: RawTriggers,
    #[serde(default)]
    component: BTreeMap<String, RawComponent>,
}

#[derive(Debug, Default, Deserialize)]
struct RawTriggers {
    #[serde(default)]
    http: Vec<RawHttpTrigger>,
}

#[derive(Debug, Deserialize)]
struct RawHttpTrigger {
    route: String,
    component: String,
}

#[derive(Debug, Deserialize)]
struct RawVariable {
    #[serde(default)]
    default: Option<String>,
    #[serde(default)]
    required: bool,
    #[serde(default)]
    #[allow(dead_code)]
    secret: bool,
}

#[derive(Debug, Deserialize)]
struct RawComponent {
    source: String,
    #[serde(default)]
    key_value_stores: Vec<String>,
    #[serde(default)]
    allowed_outbound_hosts: Vec<String>,
    #[serde(default)]
    variables: BTreeMap<String, String>,
}

/// One HTTP component, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Component {
    pub(crate) id: String,
    pub(crate) route: String,
    pub(crate) source: PathBuf,
    pub(crate) key_value_stores: Vec<String>,
    pub(crate) allowed_outbound_hosts: Vec<String>,
    /// Component variable name → resolved value.
    pub(crate) variables: BTreeMap<String, String>,
}

/// Reads `path` and resolves variables from `SPIN_VARIABLE_<NAME>` in
/// `env` (Spin's environment provider), then application defaults.
pub(crate) fn load(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Vec<Component>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let raw: Raw = toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    if raw.spin_manifest_version != 2 {
        bail!("spin_manifest_version {} is not supported (expected 2)", raw.spin_manifest_version);
    }
    let base = path.parent().unwrap_or(Path::new("."));

    let mut app_values = BTreeMap::new();
    for (name, variable) in &raw.variables {
        let value = env(&format!("SPIN_VARIABLE_{}", name.to_ascii_uppercase())).or_else(|| variable.default.clone());
        match value {
            Some(value) => {
                app_values.insert(name.clone(), value);
            }
            None if variable.required => bail!("variable `{name}` is required but not set"),
            None => {}
        }
    }

    let mut components = Vec::new();
    for trigger in raw.trigger.http {
        let Some(raw_component) = raw.component.get(&trigger.component) else {
            bail!("trigger for route `{}` names unknown component `{}`", trigger.route, trigger.component);
        };
        let mut variables = BTreeMap::new();
        for (name, template) in &raw_component.variables {
            variables.insert(
                name.clone(),
                expand(template, &app_values).with_context(|| format!("component variable `{name}`"))?,
            );
        }
        components.push(Component {
            id: trigger.component.clone(),
            route: trigger.route,
            source: base.join(&raw_component.source),
            key_value_stores: raw_component.key_value_stores.clone(),
            allowed_outbound_hosts: raw_component.allowed_outbound_hosts.clone(),
            variables,
        });
    }
    if components.is_empty() {
        bail!("{} has no HTTP triggers", path.display());
    }
    Ok(components)
}

/// Expands `{{ name }}` references to application variables.
fn expand(template: &str, values: &BTreeMap<String, String>) -> anyhow::Result<String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find("}}") else { bail!("unterminated `{{{{` in `{template}`") };
        let name = rest[start + 2..start + end].trim();
        let Some(value) = values.get(name) else { bail!("`{name}` is not an application variable with a value") };
        out.push_str(value);
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether `path` is served by a trigger `route` (`/...` suffix = prefix).
pub(crate) fn route_matches(route: &str, path: &str) -> bool {
    match route.strip_suffix("/...") {
        Some(prefix) => path == prefix || path.starts_with(&format!("{prefix}/")) || prefix.is_empty(),
        None => path == route,
    }
}
