//! The `agent-zero` binary: [`agent_zero_cli::run`] over the process's
//! arguments, working directory and standard streams.

use std::process::ExitCode;

fn main() -> ExitCode {
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            eprintln!("agent-zero: the working directory is unreadable: {e}");
            return ExitCode::from(agent_zero_cli::EXIT_FAILED);
        }
    };
    let status = agent_zero_cli::run(std::env::args_os(), &cwd, &mut std::io::stdout(), &mut std::io::stderr());
    ExitCode::from(status)
}
