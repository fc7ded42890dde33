//! The evidence bundle as JSON: the contract's own field names (camelCase,
//! kebab-case values), pretty-printed with keys in sorted order (stable for
//! diffs whatever the struct order), with secret values scrubbed.

use agent_zero_contracts::EvidenceBundle;
use serde_json::Value;

use crate::RenderOptions;
use crate::text::Ctx;

/// Serialises the bundle with stable field names. Every string value has the
/// given secrets replaced; nothing else is changed (untrusted text stays as
/// recorded: JSON consumers escape for their own output).
pub fn render_json(bundle: &EvidenceBundle, options: &RenderOptions<'_>) -> String {
    let ctx = Ctx::new(options);
    // Serialising plain data with string keys cannot fail; a failure would be
    // a bug in the contracts, reported in the output rather than a panic.
    let mut value = match serde_json::to_value(bundle) {
        Ok(v) => v,
        Err(e) => return format!("{{\"error\":{}}}", Value::String(e.to_string())),
    };
    scrub(&ctx, &mut value);
    let mut out = serde_json::to_string_pretty(&value).unwrap_or_default();
    out.push('\n');
    out
}

fn scrub(ctx: &Ctx<'_>, value: &mut Value) {
    match value {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(clean) = ctx.scrub(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| scrub(ctx, v)),
        Value::Object(map) => map.values_mut().for_each(|v| scrub(ctx, v)),
        _ => {}
    }
}
