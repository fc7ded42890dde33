//! The subset of Spin's manifest (v2) this host serves: the application's
//! variables, HTTP triggers (public routes and `{ private = true }` ones),
//! and each component's source, key-value stores, SQLite databases, allowed
//! outbound hosts and variables.

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
    /// A string pattern or `{ private = true }`: checked by [`Route::parse`].
    route: toml::Value,
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
    sqlite_databases: Vec<String>,
    #[serde(default)]
    allowed_outbound_hosts: Vec<String>,
    #[serde(default)]
    variables: BTreeMap<String, String>,
}

/// An HTTP trigger's `route`, as Spin's `HttpTriggerRouteConfig`
/// (crates/routes/src/lib.rs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// `route = "/path"` or `"/prefix/..."`: matched by external requests.
    Public(String),
    /// `route = { private = true }`: never matched by an external request;
    /// reachable only through service chaining
    /// (`http://<component>.spin.internal/...`).
    Private,
}

impl Route {
    /// Accepts what Spin accepts: a string, or a table that is exactly
    /// `{ private = true }`. Spin's router refuses `{ private = false }`
    /// ("route must be a string pattern or '{ private = true }'", Router::build
    /// in crates/routes/src/lib.rs) and its untagged, `deny_unknown_fields`
    /// deserialization refuses any other shape.
    fn parse(value: &toml::Value, component: &str) -> anyhow::Result<Self> {
        const EXPECTED: &str = "route must be a string pattern or `{ private = true }`";
        let found = match value {
            toml::Value::String(route) => return Ok(Self::Public(route.clone())),
            toml::Value::Table(table) if table.len() == 1 => match table.get("private") {
                Some(toml::Value::Boolean(true)) => return Ok(Self::Private),
                Some(toml::Value::Boolean(false)) => "`{ private = false }`".to_owned(),
                Some(other) => format!("`private` of type {}", other.type_str()),
                None => format!("a table with keys {:?}", table.keys().collect::<Vec<_>>()),
            },
            toml::Value::Table(table) => format!("a table with keys {:?}", table.keys().collect::<Vec<_>>()),
            other => format!("a value of type {}", other.type_str()),
        };
        bail!("{EXPECTED}: the trigger for component `{component}` has {found}")
    }

    /// Whether an external request for `path` is routed here.
    pub(crate) fn matches(&self, path: &str) -> bool {
        match self {
            Self::Public(route) => route_matches(route, path),
            Self::Private => false,
        }
    }
}

/// One HTTP component, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Component {
    pub(crate) id: String,
    pub(crate) route: Route,
    pub(crate) source: PathBuf,
    pub(crate) key_value_stores: Vec<String>,
    /// The SQLite databases it may open (`sqlite_databases`).
    pub(crate) sqlite_databases: Vec<String>,
    pub(crate) allowed_outbound_hosts: Vec<String>,
    /// Component variable name → resolved value.
    pub(crate) variables: BTreeMap<String, String>,
}

/// The application: its HTTP-triggered components and every component id.
#[derive(Debug, Clone)]
pub(crate) struct Manifest {
    /// One per `[[trigger.http]]`, in manifest order.
    pub(crate) components: Vec<Component>,
    /// Every `[component.<id>]`, triggered or not: what Spin expands
    /// `http://*.spin.internal` to.
    pub(crate) component_ids: Vec<String>,
}

/// Reads `path` and resolves variables from `SPIN_VARIABLE_<NAME>` in
/// `env` (Spin's environment provider), then application defaults.
pub(crate) fn load(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Manifest> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&text, base, env).with_context(|| format!("loading {}", path.display()))
}

/// [`load`] on the manifest's text; component sources are relative to `base`.
fn parse(text: &str, base: &Path, env: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Manifest> {
    let raw: Raw = toml::from_str(text).context("parsing the manifest")?;
    if raw.spin_manifest_version != 2 {
        bail!("spin_manifest_version {} is not supported (expected 2)", raw.spin_manifest_version);
    }

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
            bail!("an HTTP trigger names unknown component `{}`", trigger.component);
        };
        let route = Route::parse(&trigger.route, &trigger.component)?;
        let mut variables = BTreeMap::new();
        for (name, template) in &raw_component.variables {
            variables.insert(
                name.clone(),
                expand(template, &app_values).with_context(|| format!("component variable `{name}`"))?,
            );
        }
        let mut allowed_outbound_hosts = Vec::new();
        for entry in &raw_component.allowed_outbound_hosts {
            let resolved = expand(entry, &app_values)
                .with_context(|| format!("component `{}`: allowed_outbound_hosts", trigger.component))?;
            // Spin's `parse_or_skip`: a template that resolves to nothing (an
            // unset variable) is skipped; a literal must be a host.
            let templated = entry.contains("{{");
            if templated && (resolved.is_empty() || resolved == "http://" || resolved == "https://") {
                continue;
            }
            allowed_outbound_hosts.push(resolved);
        }
        components.push(Component {
            id: trigger.component.clone(),
            route,
            source: base.join(&raw_component.source),
            key_value_stores: raw_component.key_value_stores.clone(),
            sqlite_databases: raw_component.sqlite_databases.clone(),
            allowed_outbound_hosts,
            variables,
        });
    }
    if components.is_empty() {
        bail!("the manifest has no HTTP triggers");
    }
    Ok(Manifest { components, component_ids: raw.component.into_keys().collect() })
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

/// Whether `path` is served by a public trigger `route` (`/...` suffix = prefix).
pub(crate) fn route_matches(route: &str, path: &str) -> bool {
    match route.strip_suffix("/...") {
        Some(prefix) => path == prefix || path.starts_with(&format!("{prefix}/")) || prefix.is_empty(),
        None => path == route,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const APP: &str = r#"
spin_manifest_version = 2

[application]
name = "app"

[variables]
token = { default = "t0" }

[[trigger.http]]
route = "/..."
component = "public"

[[trigger.http]]
route = { private = true }
component = "ticks"

[component.public]
source = "public.wasm"
allowed_outbound_hosts = ["http://ticks.spin.internal"]

[component.ticks]
source = "ticks.wasm"
key_value_stores = ["default"]
sqlite_databases = ["default", "audit"]
allowed_outbound_hosts = ["https://api.github.com"]
[component.ticks.variables]
token = "{{ token }}"

[component.untriggered]
source = "other.wasm"
"#;

    fn parse_app(text: &str) -> anyhow::Result<Manifest> {
        parse(text, Path::new("/app"), &|_| None)
    }

    fn with_route(route: &str) -> String {
        APP.replace("route = { private = true }", &format!("route = {route}"))
    }

    #[test]
    fn private_route_is_loaded_but_never_routed() {
        let manifest = parse_app(APP).unwrap();
        let [public, ticks] = &manifest.components[..] else { panic!("two triggers: {manifest:?}") };
        assert_eq!(public.route, Route::Public("/...".into()));
        assert_eq!(ticks.id, "ticks");
        assert_eq!(ticks.route, Route::Private);
        // The private component keeps its own configuration.
        assert_eq!(ticks.source, Path::new("/app/ticks.wasm"));
        assert_eq!(ticks.key_value_stores, ["default"]);
        assert_eq!(ticks.sqlite_databases, ["default", "audit"]);
        assert_eq!(ticks.allowed_outbound_hosts, ["https://api.github.com"]);
        assert_eq!(ticks.variables.get("token").map(String::as_str), Some("t0"));
        // No external path reaches it, not even the ones `/...` matches.
        for path in ["/", "/ticks", "/anything/else"] {
            assert!(!ticks.route.matches(path), "{path}");
            assert!(public.route.matches(path), "{path}");
        }
        assert_eq!(manifest.component_ids, ["public", "ticks", "untriggered"]);
    }

    /// Spin resolves templated entries with the application's variables and
    /// skips one that resolves to nothing (`parse_or_skip` in
    /// crates/outbound-networking-config/src/allowed_hosts.rs).
    #[test]
    fn templated_allowed_hosts_resolve_and_empty_ones_are_skipped() {
        let text = APP
            .replace(
                "token = { default = \"t0\" }",
                "token = { default = \"t0\" }\norigin = { default = \"\" }\nhost = { default = \"\" }",
            )
            .replace(
                "allowed_outbound_hosts = [\"https://api.github.com\"]",
                "allowed_outbound_hosts = [\"https://api.github.com\", \"{{ origin }}\", \"https://{{ host }}\"]",
            );
        let with_origin = |value: &str| {
            let value = value.to_owned();
            let manifest =
                parse(&text, Path::new("/app"), &move |name| (name == "SPIN_VARIABLE_ORIGIN").then(|| value.clone()))
                    .unwrap();
            manifest.components[1].allowed_outbound_hosts.clone()
        };
        assert_eq!(with_origin(""), ["https://api.github.com"], "unset templates are skipped");
        let hosts = with_origin("http://127.0.0.1:4100");
        assert_eq!(hosts, ["https://api.github.com", "http://127.0.0.1:4100"]);
        let allowed = crate::outbound::AllowedHosts::parse(&hosts).unwrap();
        assert!(allowed.allows(&"http://127.0.0.1:4100/v1/responses".parse().unwrap()));
        assert!(!allowed.allows(&"http://127.0.0.1:4101/v1/responses".parse().unwrap()));
        let e = crate::outbound::AllowedHosts::parse(&with_origin("http://127.0.0.1:4100/v1")).unwrap_err();
        assert!(e.to_string().contains("has a path"), "{e}");
    }

    /// `sqlite_databases` is per component, in manifest order, and absent
    /// means none (Spin's `databases` metadata defaults to empty).
    #[test]
    fn sqlite_databases_are_read_per_component() {
        let manifest = parse_app(APP).unwrap();
        let [public, ticks] = &manifest.components[..] else { panic!("two triggers: {manifest:?}") };
        assert!(public.sqlite_databases.is_empty(), "{public:?}");
        assert_eq!(ticks.sqlite_databases, ["default", "audit"]);
        let e =
            parse_app(&APP.replace("sqlite_databases = [\"default\", \"audit\"]", "sqlite_databases = \"default\""))
                .unwrap_err();
        assert!(format!("{e:#}").contains("sqlite_databases"), "{e:#}");
    }

    #[test]
    fn only_private_true_is_accepted_besides_strings() {
        let refused = |route: &str| parse_app(&with_route(route)).unwrap_err().to_string();
        let e = refused("{ private = false }");
        assert!(e.contains("route must be a string pattern or `{ private = true }`"), "{e}");
        assert!(e.contains("`ticks` has `{ private = false }`"), "{e}");
        assert!(refused("{ private = \"yes\" }").contains("`private` of type string"));
        assert!(refused("{ private = true, extra = 1 }").contains("a table with keys"));
        assert!(refused("{ public = true }").contains("a table with keys [\"public\"]"));
        assert!(refused("{}").contains("a table with keys []"));
        assert!(refused("true").contains("has a value of type boolean"));
        assert!(refused("[\"/a\"]").contains("has a value of type array"));
        // A string route is still a public route.
        let manifest = parse_app(&with_route("\"/ticks/...\"")).unwrap();
        assert!(manifest.components[1].route.matches("/ticks/now"));
    }

    #[test]
    fn public_routes_match_like_spin() {
        assert!(route_matches("/...", "/"));
        assert!(route_matches("/...", "/a/b"));
        assert!(route_matches("/api/...", "/api"));
        assert!(route_matches("/api/...", "/api/x"));
        assert!(!route_matches("/api/...", "/apix"));
        assert!(route_matches("/exact", "/exact"));
        assert!(!route_matches("/exact", "/exact/more"));
    }
}
