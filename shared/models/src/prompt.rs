//! The user message every wire format sends: the step, the bounded context
//! fenced as data, and the previous answer's violation when repairing.

use crate::DecisionRequest;

/// Renders the single user turn for `request`.
pub fn render_user_message(request: &DecisionRequest) -> String {
    let mut out = String::with_capacity(request.context.len() + 512);
    out.push_str("<step name=\"");
    out.push_str(request.schema.wire_name());
    out.push_str("\">\n");
    out.push_str(request.schema.purpose());
    out.push_str("\nAnswer with one JSON object matching the schema; nothing else.\n</step>\n\n");
    out.push_str("<repository-context>\n");
    out.push_str(&request.context);
    if !request.context.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("</repository-context>\n");
    if let Some(violation) = &request.previous_violation {
        out.push_str("\n<previous-answer-rejected>\nYour previous answer could not be used: ");
        out.push_str(violation);
        out.push_str("\nAnswer again, correcting this.\n</previous-answer-rejected>\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SchemaName;

    #[test]
    fn includes_the_violation_only_when_repairing() {
        let mut request = DecisionRequest::new("sys", "FILES\nsrc/a.rs", SchemaName::Plan);
        let first = render_user_message(&request);
        assert!(first.contains("<step name=\"agent_zero_plan\">"));
        assert!(first.contains("<repository-context>\nFILES\nsrc/a.rs\n</repository-context>"));
        assert!(!first.contains("previous-answer-rejected"));
        assert!(!first.contains("sys"), "the system prompt travels separately");
        request.previous_violation = Some("`plan`: missing".into());
        let again = render_user_message(&request);
        assert!(again.contains("could not be used: `plan`: missing"));
        assert!(again.find("</repository-context>") < again.find("<previous-answer-rejected>"));
    }
}
