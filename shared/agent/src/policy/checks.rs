//! Check commands: argv arrays, run without a shell.

use std::fmt;

use serde::{Serialize, Serializer};

use super::PolicyError;

/// Text that means something to a shell and nothing to `execve`: longest
/// first, so `2>` is reported rather than `>`. The same set as the
/// reference (`;&|<>`$(){}` and line breaks) plus NUL. Globs stay allowed:
/// tools that take patterns expand them themselves.
const SHELL_OPERATORS: &[&str] =
    &["&&", "||", ">>", "2>", "$(", "${", "|", ";", "&", ">", "<", "`", "$", "(", ")", "{", "}", "\n", "\r", "\0"];

/// One repository check as argv (`["cargo", "test", "--locked"]`). In YAML
/// it is a list of strings, or (as in the reference) one string that is
/// split on whitespace; quotes in the string form are refused because
/// nothing would interpret them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckCommand {
    pub argv: Vec<String>,
}

impl CheckCommand {
    /// A check from its argv (not validated; [`crate::Policy::parse`] does that).
    pub fn new<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self { argv: argv.into_iter().map(Into::into).collect() }
    }

    /// The program to run.
    pub fn program(&self) -> Option<&str> {
        self.argv.first().map(String::as_str)
    }
}

impl fmt::Display for CheckCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.argv.join(" "))
    }
}

/// Checks the `index`th command: a non-empty program, no shell operator in
/// any argument. Errors name `checks[i]` or `checks[i][j]`.
pub(crate) fn check_command(index: usize, command: &CheckCommand) -> Result<(), PolicyError> {
    check_argv(&format!("checks[{index}]"), &command.argv)
}

/// The same rules for any argv of the policy at `field`.
pub(crate) fn check_argv(field: &str, argv: &[String]) -> Result<(), PolicyError> {
    match argv.first() {
        None => return Err(PolicyError::EmptyCommand { field: field.to_owned() }),
        Some(program) if program.trim().is_empty() => {
            return Err(PolicyError::EmptyCommand { field: format!("{field}[0]") });
        }
        Some(_) => {}
    }
    for (position, argument) in argv.iter().enumerate() {
        if let Some(operator) = SHELL_OPERATORS.iter().find(|op| argument.contains(**op)) {
            return Err(PolicyError::ShellOperator {
                field: format!("{field}[{position}]"),
                operator: operator.escape_debug().to_string(),
            });
        }
    }
    Ok(())
}

impl Serialize for CheckCommand {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.argv.serialize(serializer)
    }
}
