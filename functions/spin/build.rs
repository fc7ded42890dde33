//! Reads the tick component's `allowed_outbound_hosts` from the `spin.toml`
//! beside this crate into a constant (`$OUT_DIR/allowed_hosts.rs`), so the
//! component knows the list it is deployed with (`spin build` rebuilds it
//! when the manifest changes) without carrying the manifest itself.

use std::path::Path;

/// The component whose list the app checks: the one that calls providers.
const COMPONENT: &str = "agent-zero-ticks";

fn main() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spin.toml");
    println!("cargo:rerun-if-changed={}", manifest.display());
    let text = std::fs::read_to_string(&manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let hosts = allowed_hosts_of(&text, COMPONENT);
    assert!(!hosts.is_empty(), "spin.toml: [component.{COMPONENT}] lists no allowed_outbound_hosts");
    let entries: String = hosts.iter().map(|h| format!("    {h:?},\n")).collect();
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("allowed_hosts.rs");
    let code = format!(
        "/// `allowed_outbound_hosts` of `[component.{COMPONENT}]` in spin.toml.\npub(crate) const TICKS_ALLOWED_HOSTS: &[&str] = &[\n{entries}];\n"
    );
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}

/// The quoted entries of `allowed_outbound_hosts = [...]` in the
/// `[component.<id>]` table (our `spin.toml`'s layout: one entry a line,
/// `#` comments).
fn allowed_hosts_of<'a>(manifest: &'a str, id: &str) -> Vec<&'a str> {
    let header = format!("[component.{id}]");
    let mut lines = manifest.lines().skip_while(|line| line.trim() != header).skip(1);
    let mut hosts = Vec::new();
    let found = lines
        .by_ref()
        .take_while(|line| !line.starts_with('['))
        .any(|line| line.trim_start().starts_with("allowed_outbound_hosts"));
    if !found {
        return hosts;
    }
    for line in lines {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.starts_with(']') {
            break;
        }
        if let Some(entry) = line.split('"').nth(1) {
            hosts.push(entry);
        }
    }
    hosts
}
