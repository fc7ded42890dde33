//! Why a `.agent-zero.yml` was refused. Every message names the field path.

/// A repository policy that cannot be honoured. A run never proceeds on a
/// policy it could not read: widening permissions by falling back to
/// defaults would be worse than failing with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The file is larger than any sane policy; refused before parsing so a
    /// hostile repository cannot spend the handler's CPU budget.
    #[error(".agent-zero.yml: {bytes} bytes is over the {max}-byte limit")]
    TooLarge { bytes: usize, max: usize },
    /// The file is not UTF-8 text.
    #[error(".agent-zero.yml: not valid UTF-8")]
    NotUtf8,
    /// YAML syntax, an unknown key, or a value of the wrong type; the
    /// parser's message carries the field path and the line.
    #[error(".agent-zero.yml: {message}")]
    Syntax { message: String },
    /// A key the reference knows but a repository may not set at the edge
    /// (an endpoint, or a setting the operator's sandbox owns).
    #[error("{field} is not allowed in repository policy: {reason}")]
    Forbidden { field: String, reason: String },
    /// A value of the right type outside its allowed range or shape.
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    /// A check argument carries a shell operator; commands run without a
    /// shell, so it would be passed literally and silently mis-run.
    #[error("{field}: `{operator}` is a shell operator; checks run as argv without a shell")]
    ShellOperator { field: String, operator: String },
    /// A check with no program to run.
    #[error("{field}: a check command needs at least a program name")]
    EmptyCommand { field: String },
}

impl PolicyError {
    /// The policy field the error names, when it names one (syntax errors
    /// carry the path inside their message).
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Forbidden { field, .. }
            | Self::Invalid { field, .. }
            | Self::ShellOperator { field, .. }
            | Self::EmptyCommand { field } => Some(field),
            _ => None,
        }
    }

    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid { field: field.into(), reason: reason.into() }
    }
}
