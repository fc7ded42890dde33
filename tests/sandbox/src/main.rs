//! `agent-zero-sandbox`: the reference server for the `custom` sandbox
//! protocol (`shared/runner/PROTOCOL.md`). A native development and test
//! tool: it clones into a temp dir per lease and runs real processes. It is
//! not an isolation boundary and says so (`"isolated": false`).
//!
//! `cargo run --release --bin agent-zero-sandbox -- --listen 127.0.0.1:<port> [--repos DIR]`
//! with the bearer token in `AGENT_ZERO_SANDBOX_TOKEN`. Port 0 binds a free
//! port; the first line on standard error names the address bound
//! (`agent-zero-sandbox listening on 127.0.0.1:PORT`), so a caller reads the
//! port from the server instead of choosing one that may be taken.

#![forbid(unsafe_code)]

mod checkout;
mod exec;
mod server;

use std::path::PathBuf;

fn main() {
    let mut listen = None;
    let mut repos = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => listen = args.next(),
            "--repos" => repos = args.next().map(PathBuf::from),
            other => exit(&format!("unknown argument `{other}`; usage: --listen ADDR [--repos DIR]")),
        }
    }
    let Some(listen) = listen else { exit("missing --listen ADDR") };
    let token = match std::env::var("AGENT_ZERO_SANDBOX_TOKEN") {
        Ok(token) if !token.is_empty() => token,
        _ => exit("AGENT_ZERO_SANDBOX_TOKEN is not set"),
    };
    let server = match tiny_http::Server::http(&listen) {
        Ok(server) => server,
        Err(error) => exit(&format!("cannot listen on {listen}: {error}")),
    };
    match server.server_addr().to_ip() {
        Some(bound) => eprintln!("agent-zero-sandbox listening on {bound}"),
        None => exit(&format!("{listen} is not an IP address")),
    }
    server::serve(server, server::Config { token, repos });
}

fn exit(message: &str) -> ! {
    eprintln!("agent-zero-sandbox: {message}");
    std::process::exit(2)
}
