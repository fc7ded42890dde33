//! Background jobs: commands started in one tick and polled in later ones,
//! built on nothing but [`SandboxProvider::exec`] and three fixed `sh`
//! scripts, so every adapter has them unchanged.
//!
//! - Where: a job's files live in `${TMPDIR:-/tmp}/agent-zero-jobs/<job id>/`
//!   inside the sandbox, outside the checkout (the checkout's file list and
//!   diff never see them): `spec` (the fingerprint of the commands), `spawned`
//!   (the pid the start script forked), `pid` (the runner's own pid, `$$`)
//!   and `ident` (who that pid is: boot id and start time, from `/proc`),
//!   `log` (the runner's own standard error), and per command `N` (from 1)
//!   `N.out`, `N.err`, `N.start`, `N.end` (`date +%s%N`) and `N.exit`
//!   (`<status> <timeout seconds>`), then `done` (the count of commands) once
//!   every command ended.
//! - Start: one exec of [`START_SCRIPT`]: `mkdir` of the job directory is the
//!   lock (a job id that exists already starts nothing), and the runner
//!   ([`RUN_SCRIPT`]) is forked in the background with its standard streams
//!   on `/dev/null` and a file, never on the exec's pipes, in a session of its
//!   own (`setsid`, where the sandbox has it), so the exec returns at once.
//! - Arguments: every argv element, cwd and environment entry is a
//!   positional argument of the fixed scripts, never script text.
//! - Poll: one exec of [`POLL_SCRIPT`]. A job still running costs one line of
//!   output. A finished one is printed whole: each stream's tail (at most the
//!   exec's `max_output_bytes`) **base64-encoded** (`base64` is in coreutils
//!   and busybox; a sandbox without it gets `od -An -v -tx1` hex), so bytes
//!   that are not UTF-8 and lines that look like markers never confuse the
//!   parser; they are decoded here, then read as lossy UTF-8.
//! - Lost: no job directory (the sandbox restarted empty, or the job was
//!   never started), or no `done` marker while the runner is not alive: its
//!   pid is gone, a zombie, or now another process (a different boot id or
//!   start time: the runner was killed, or the sandbox restarted with its
//!   disk kept).
//! - Timeouts: each command under `timeout -s KILL <seconds>` (whole seconds,
//!   rounded up), or a shell watchdog where the sandbox has no usable
//!   `timeout`; a status of 124 or 137 after at least the timeout is
//!   `timed_out` with exit -1, as the synchronous path reports it.

use std::collections::BTreeMap;

use crate::provider::{Exec, ExecOutput, ProviderError, SandboxProvider, SandboxRef};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// Where a background job stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobPoll {
    /// Still running: poll again later.
    Running,
    /// Every command ended: one output per command, in order.
    Done(Vec<ExecOutput>),
    /// The sandbox has no live job of that id and no results for it: why.
    Lost(String),
}

/// Starts the job. Arguments: `$1` the job id, `$2` the fingerprint of the
/// commands, `$3` the text of [`RUN_SCRIPT`], then the commands (see
/// [`RUN_SCRIPT`]). Prints `@started`, `@exists <fingerprint>` or
/// `@failed <why>`.
///
/// 1. The directory of all jobs, outside the checkout.
/// 2. Created if missing (exit 70 when it cannot be).
/// 3. This job's directory.
/// 4. `mkdir` is atomic: whoever creates the directory starts the job; a
///    start that finds it (a replayed tick) starts nothing and says whose
///    commands it holds; any other failure is reported (exit 71).
/// 5. The fingerprint, for a replay and for the poll to compare.
/// 6. The runner's text; the remaining arguments are the commands.
/// 7. `setsid` when the sandbox has it: the runner leads a session and a
///    process group of its own, so a sandbox that signals the exec's process
///    group or session when the exec returns does not reach it. Without
///    `setsid` it stays in the exec's group and relies on ignoring `SIGHUP`
///    (first line of [`RUN_SCRIPT`]).
/// 8. The runner, in the background: standard input from `/dev/null`,
///    output to `/dev/null` and its errors to `log`, so nothing holds the
///    exec's pipes and the exec ends when this script does. `$s` is unquoted
///    on purpose: empty, it is no word at all.
/// 9. The pid forked, until the runner writes its own (`pid`).
/// 10. Done.
const START_SCRIPT: &str = r#"_d=${TMPDIR:-/tmp}/agent-zero-jobs
mkdir -p "$_d" || exit 70
_d=$_d/$1
if ! mkdir "$_d" 2>/dev/null; then if [ -d "$_d" ]; then echo "@exists $(cat "$_d/spec" 2>/dev/null)"; exit 0; fi; echo "@failed cannot create $_d"; exit 71; fi
printf '%s\n' "$2" >"$_d/spec"
_r=$3; shift 3
_s=; command -v setsid >/dev/null 2>&1 && _s=setsid
$_s sh -c "$_r" agent-zero-job-run "$_d" "$@" </dev/null >/dev/null 2>"$_d/log" &
echo "$!" >"$_d/spawned"
echo @started"#;

/// Runs the commands in order. Arguments: `$1` the job directory, then per
/// command `<timeout seconds> <cwd> <env count> NAME=value… <argc> argv…`.
/// Variables start with `_` so they do not collide with the environment
/// the sandbox gives commands (an inherited variable is exported).
///
/// 1. `SIGHUP` ignored (and so for every command, as `nohup` does): the end
///    of the exec's session or terminal does not end the job.
/// 2. The job directory; the commands follow.
/// 3. This shell's pid, for the poll to tell a live job from a killed one.
/// 4. Who a pid is: the kernel's boot id and the process's start time
///    (field 22 of `/proc/PID/stat`; `set --` inside a function touches the
///    function's arguments only). The same line is in [`POLL_SCRIPT`].
/// 5. This shell's identity, so a pid reused after the runner died, or
///    after the sandbox restarted with its disk kept (a stop and resume),
///    is not taken for it. Without `/proc` it is empty and the pid alone is
///    checked.
/// 6. Whether the sandbox has a `timeout` taking `-s KILL SECS` (coreutils,
///    busybox ≥ 1.30). Without one, each command gets a watchdog (lines
///    18-21), which kills the command's process only, not its children.
/// 7. The command counter.
/// 8. One pass per command, while arguments remain.
/// 9. Its number, timeout, cwd and count of environment entries.
/// 10. Its start time (`%N`-less `date`s, busybox's, print seconds only).
/// 11. A subshell, so the environment and `cd` stay with this command.
/// 12. Exports the command's environment entries (`NAME=value`, one
///     argument each: nothing in a value is interpreted).
/// 13. Its argc; `_a` counts the arguments after it (its argv, then the
///     commands after it).
/// 14. Appends this command's argv (the first `_n` of them) to the list
///     (`for` walks the list as it was before the loop)...
/// 15. ...and drops the original list: `"$@"` is exactly the argv.
/// 16. Into the checkout-relative cwd (`./` so `CDPATH` plays no part); a
///     missing one fails the command with 127, as a program that cannot be
///     started does.
/// 17. With `timeout`: it runs the argv (no shell in between), and kills it
///     (and, with coreutils, its process group) at the deadline: exit 137.
/// 18. Without: the argv runs in a background subshell that `exec`s it (a
///     program, never a shell builtin), ...
/// 19. ...a watchdog kills it at the deadline (exit 137 too), ...
/// 20. ...its status is collected, ...
/// 21. ...the watchdog is stopped (its `sleep` ends on its own) ...
/// 22. ...and is the subshell's status.
/// 23. The subshell's streams: nothing in, its output to the job's files.
/// 24. Its status, kept before anything else runs.
/// 25. Its end time.
/// 26. Status and timeout: the poll tells a timeout from a failure.
/// 27. Skips this command's environment entries and argv: the next one.
/// 28. End of the pass.
/// 29. The completion marker, written whole (`mv` is atomic): the count of
///     commands run.
const RUN_SCRIPT: &str = r#"trap '' HUP
_d=$1; shift
echo "$$" >"$_d/pid"
_id() { _z=; read -r _z <"/proc/$1/stat" || return; set -- ${_z##*) }; [ "$#" -ge 20 ] && echo "$(cat /proc/sys/kernel/random/boot_id)-${20}"; }
_id "$$" >"$_d/ident" 2>/dev/null
_t=; timeout -s KILL 10 true >/dev/null 2>&1 && _t=1
_i=0
while [ "$#" -gt 0 ]; do
_i=$((_i + 1)); _s=$1; _c=$2; _e=$3; shift 3
date +%s%N >"$_d/$_i.start"
(
while [ "$_e" -gt 0 ]; do export "$1"; shift; _e=$((_e - 1)); done
_n=$1; shift; _k=0; _a=$#
for _x do [ "$_k" -lt "$_n" ] && set -- "$@" "$_x"; _k=$((_k + 1)); done
shift "$_a"
cd "./$_c" || exit 127
[ -n "$_t" ] && exec timeout -s KILL "$_s" "$@"
(exec "$@") & _p=$!
(sleep "$_s"; kill -KILL "$_p") >/dev/null 2>&1 & _w=$!
wait "$_p"; _x=$?
kill "$_w" 2>/dev/null
exit "$_x"
) </dev/null >"$_d/$_i.out" 2>"$_d/$_i.err"
_x=$?
date +%s%N >"$_d/$_i.end"
echo "$_x $_s" >"$_d/$_i.exit"
shift "$_e"; _n=$1; shift $((_n + 1))
done
echo "$_i" >"$_d/done.tmp" && mv "$_d/done.tmp" "$_d/done""#;

/// Reports a job. Arguments: `$1` the job id, then one byte cap per
/// command. Prints one of `@running`, `@lost <code>`, or `@done <encoding>
/// <count> <fingerprint>` followed, per command, by `@cmd <status>
/// <timeout seconds> <start> <end> <stdout bytes> <stderr bytes>`, `@out`,
/// the encoded tail of its stdout, `@err`, the encoded tail of its stderr,
/// and finally `@end` (a cut answer lacks it). `@` is in neither encoding's
/// alphabet.
///
/// 1. Nothing on stderr (Daytona merges it into the output).
/// 2. The job directory; the byte caps follow.
/// 3. No directory: the sandbox has no trace of the job.
/// 4. No completion marker yet:
/// 5. the runner's own pid, or else the one the start script forked;
/// 6. neither: the start was cut short before it forked anything;
/// 7. who a pid is, as line 4 of [`RUN_SCRIPT`] says;
/// 8. the process state from `/proc` where there is one (`Z`: a zombie
///    nobody reaped, dead);
/// 9. alive, not a zombie, and the runner itself (its identity, when it
///    recorded one, is the live process's): running.
/// 10. Gone: finished in between (the marker is there now), or killed.
/// 11. End of the not-finished case.
/// 12. The encoding: base64 where the sandbox has it, else `od` hex.
/// 13. The header: encoding, count of commands run, fingerprint.
/// 14. The command counter; one pass per byte cap.
/// 15. Its number.
/// 16. Its status and timeout, times, and the full size of each stream.
/// 17. Each stream:
/// 18. its marker,
/// 19. its last `cap` bytes, encoded.
/// 20. End of a stream, end of a command.
/// 21. The end marker: the answer is whole.
const POLL_SCRIPT: &str = r#"exec 2>/dev/null
_d=${TMPDIR:-/tmp}/agent-zero-jobs/$1; shift
[ -d "$_d" ] || { echo "@lost no-trace"; exit 0; }
if [ ! -f "$_d/done" ]; then
_p=$(cat "$_d/pid"); [ -n "$_p" ] || _p=$(cat "$_d/spawned")
[ -n "$_p" ] || { echo "@lost never-spawned"; exit 0; }
_id() { _z=; read -r _z <"/proc/$1/stat" || return; set -- ${_z##*) }; [ "$#" -ge 20 ] && echo "$(cat /proc/sys/kernel/random/boot_id)-${20}"; }
_z=; [ -r "/proc/$_p/stat" ] && read -r _z <"/proc/$_p/stat" && _z=${_z##*) }
kill -0 "$_p" && [ "${_z%% *}" != Z ] && { [ ! -s "$_d/ident" ] || [ "$(cat "$_d/ident")" = "$(_id "$_p")" ]; } && { echo @running; exit 0; }
[ -f "$_d/done" ] || { echo "@lost exited"; exit 0; }
fi
_e=base64; command -v base64 >/dev/null || _e=hex
echo "@done $_e $(cat "$_d/done") $(cat "$_d/spec")"
_i=0; for _m do
_i=$((_i + 1))
echo "@cmd $(cat "$_d/$_i.exit") $(cat "$_d/$_i.start") $(cat "$_d/$_i.end") $(wc -c <"$_d/$_i.out") $(wc -c <"$_d/$_i.err")"
for _f in out err; do
echo "@$_f"
if [ "$_e" = base64 ]; then tail -c "$_m" "$_d/$_i.$_f" | base64; else tail -c "$_m" "$_d/$_i.$_f" | od -An -v -tx1; fi
done; done
echo @end"#;

/// How long the start and the poll execs may take (they do not wait on
/// the commands).
const START_TIMEOUT_MS: u64 = 30_000;
const POLL_TIMEOUT_MS: u64 = 60_000;

/// Whether `id` can name a job: 1 to 64 bytes of `[A-Za-z0-9._-]`, and not
/// `.` or `..` (it is a directory name).
pub(crate) fn is_job_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && id != "."
        && id != ".."
}

fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Refuses what the scripts cannot carry: a malformed job id, an empty
/// argv, a NUL (no argument can hold one), an environment name that is not
/// one.
fn check(provider: &'static str, operation: &'static str, job_id: &str, execs: &[Exec]) -> Result<(), ProviderError> {
    let refused = |reason: String| ProviderError::Refused { provider, operation, reason };
    if !is_job_id(job_id) {
        return Err(refused(format!("job id `{job_id}` is not 1 to 64 of [A-Za-z0-9._-]")));
    }
    for (i, exec) in execs.iter().enumerate() {
        if exec.argv.first().is_none_or(String::is_empty) {
            return Err(refused(format!("command {i} has no program")));
        }
        let texts = exec.argv.iter().chain([&exec.cwd]).chain(exec.env.values());
        if texts.into_iter().any(|t| t.contains('\0')) {
            return Err(refused(format!("command {i} contains NUL")));
        }
        if let Some(name) = exec.env.keys().find(|k| !is_env_name(k)) {
            return Err(refused(format!("command {i}: `{name}` is not an environment name")));
        }
    }
    Ok(())
}

/// The timeout the sandbox enforces: whole seconds, rounded up (every
/// `timeout` takes integers).
fn seconds(timeout_ms: u64) -> u64 {
    timeout_ms.div_ceil(1000).max(1)
}

/// What identifies a job's commands (argv, cwd, environment; not the
/// timeout, which a later poll states anew): their count and a 64-bit
/// FNV-1a over a length-prefixed encoding. Stable across builds.
fn fingerprint(execs: &[Exec]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for exec in execs {
        eat(&(exec.argv.len() as u64).to_le_bytes());
        for arg in &exec.argv {
            eat(arg.as_bytes());
        }
        eat(exec.cwd.as_bytes());
        eat(&(exec.env.len() as u64).to_le_bytes());
        for (name, value) in &exec.env {
            eat(name.as_bytes());
            eat(value.as_bytes());
        }
    }
    format!("{}-{hash:016x}", execs.len())
}

/// A fixed script's exec: checkout root, no environment of its own.
fn script(argv: Vec<String>, timeout_ms: u64, max_output_bytes: u64) -> Exec {
    Exec { argv, cwd: String::new(), timeout_ms, max_output_bytes, env: BTreeMap::new() }
}

fn first_marker(stdout: &str) -> &str {
    stdout.lines().find(|l| l.starts_with('@')).unwrap_or("")
}

fn snippet(text: &str) -> String {
    text.chars().take(300).collect()
}

/// [`SandboxProvider::start_job`] over `exec`.
pub(crate) async fn start<P: SandboxProvider + ?Sized>(
    provider: &P,
    sandbox: &SandboxRef,
    job_id: &str,
    execs: &[Exec],
) -> Result<(), ProviderError> {
    let name = provider.kind().as_str();
    check(name, "start job", job_id, execs)?;
    let spec = fingerprint(execs);
    let mut argv: Vec<String> =
        ["sh", "-c", START_SCRIPT, "agent-zero-job", job_id, &spec, RUN_SCRIPT].map(str::to_owned).into();
    for exec in execs {
        argv.push(seconds(exec.timeout_ms).to_string());
        argv.push(exec.cwd.clone());
        argv.push(exec.env.len().to_string());
        argv.extend(exec.env.iter().map(|(k, v)| format!("{k}={v}")));
        argv.push(exec.argv.len().to_string());
        argv.extend(exec.argv.iter().cloned());
    }
    let out = provider.exec(sandbox, &script(argv, START_TIMEOUT_MS, 4096)).await?;
    let marker = first_marker(&out.stdout);
    if out.exit_code == 0 && marker == "@started" {
        return Ok(());
    }
    if out.exit_code == 0
        && let Some(theirs) = marker.strip_prefix("@exists")
    {
        // A replay of this start; an empty fingerprint is a start still
        // writing it.
        let theirs = theirs.trim();
        if theirs.is_empty() || theirs == spec {
            return Ok(());
        }
        return Err(ProviderError::Refused {
            provider: name,
            operation: "start job",
            reason: format!("job `{job_id}` exists with other commands ({theirs}, not {spec})"),
        });
    }
    Err(ProviderError::Protocol {
        provider: name,
        operation: "start job",
        reason: format!(
            "the start script exited {}{}: {} {}",
            out.exit_code,
            if out.timed_out { " (timed out)" } else { "" },
            snippet(&out.stdout),
            snippet(&out.stderr)
        ),
    })
}

/// [`SandboxProvider::poll_job`] over `exec`.
pub(crate) async fn poll<P: SandboxProvider + ?Sized>(
    provider: &P,
    sandbox: &SandboxRef,
    job_id: &str,
    execs: &[Exec],
) -> Result<JobPoll, ProviderError> {
    let name = provider.kind().as_str();
    check(name, "poll job", job_id, execs)?;
    let mut argv: Vec<String> = ["sh", "-c", POLL_SCRIPT, "agent-zero-job-poll", job_id].map(str::to_owned).into();
    argv.extend(execs.iter().map(|e| e.max_output_bytes.to_string()));
    // Room for both streams of every command at the widest encoding (hex:
    // about 3.1 characters a byte) and the marker lines.
    let budget = execs
        .iter()
        .fold(4096u64, |sum, e| sum.saturating_add(e.max_output_bytes.saturating_mul(8)).saturating_add(512));
    let out = provider.exec(sandbox, &script(argv, POLL_TIMEOUT_MS, budget)).await?;
    let protocol = |reason: String| ProviderError::Protocol { provider: name, operation: "poll job", reason };
    if out.exit_code != 0 || out.timed_out || out.truncated_bytes > 0 {
        return Err(protocol(format!(
            "the poll script exited {} (timed out: {}, {} bytes cut): {}",
            out.exit_code,
            out.timed_out,
            out.truncated_bytes,
            snippet(&out.stderr)
        )));
    }
    match parse_poll(&out.stdout, execs, &fingerprint(execs)).map_err(protocol)? {
        Parsed::Poll(poll) => Ok(poll),
        Parsed::OtherCommands(theirs) => Err(ProviderError::Refused {
            provider: name,
            operation: "poll job",
            reason: format!("job `{job_id}` ran other commands ({theirs})"),
        }),
    }
}

#[derive(Debug)]
enum Parsed {
    Poll(JobPoll),
    /// The job id holds the results of other commands: their fingerprint.
    OtherCommands(String),
}

fn lost_reason(code: &str) -> String {
    match code {
        "no-trace" => "the sandbox has no trace of the job (it restarted, or the job was never started)".into(),
        "never-spawned" => "the job's start was cut short before its process was forked".into(),
        "exited" => "the job's process is gone and it never finished (killed)".into(),
        other => format!("lost ({other})"),
    }
}

/// One command's block of a finished job's report.
#[derive(Default)]
struct Block {
    head: Vec<String>,
    out: String,
    err: String,
}

fn parse_poll(stdout: &str, execs: &[Exec], spec: &str) -> Result<Parsed, String> {
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with('@'));
    let head = lines.next().ok_or_else(|| format!("no status line in {:?}", snippet(stdout)))?;
    let words: Vec<&str> = head.split_whitespace().collect();
    let (encoding, count, theirs) = match words.as_slice() {
        ["@running"] => return Ok(Parsed::Poll(JobPoll::Running)),
        ["@lost", code] => return Ok(Parsed::Poll(JobPoll::Lost(lost_reason(code)))),
        ["@done", encoding, count, theirs] => (*encoding, *count, *theirs),
        _ => return Err(format!("unexpected status line {:?}", snippet(head))),
    };
    if theirs != spec {
        return Ok(Parsed::OtherCommands(theirs.to_owned()));
    }
    if count.parse::<usize>().ok() != Some(execs.len()) {
        return Err(format!("the job ran {count} commands, {} asked", execs.len()));
    }
    let mut blocks: Vec<Block> = Vec::new();
    let mut stream: Option<bool> = None; // Some(true): stdout
    let mut ended = false;
    for line in lines {
        if let Some(fields) = line.strip_prefix("@cmd") {
            blocks.push(Block { head: fields.split_whitespace().map(str::to_owned).collect(), ..Block::default() });
            stream = None;
        } else if line == "@out" || line == "@err" {
            stream = Some(line == "@out");
        } else if line == "@end" {
            ended = true;
            break;
        } else {
            let block = blocks.last_mut().ok_or("data before the first command")?;
            let target = match stream {
                Some(true) => &mut block.out,
                Some(false) => &mut block.err,
                None => return Err(format!("data outside a stream: {:?}", snippet(line))),
            };
            // Hex lines need a separator; base64 ignores whitespace.
            target.push_str(line);
            target.push('\n');
        }
    }
    if !ended {
        return Err("the report has no end marker (cut short)".into());
    }
    if blocks.len() != execs.len() {
        return Err(format!("{} command reports for {} commands", blocks.len(), execs.len()));
    }
    let outputs = blocks
        .iter()
        .zip(execs)
        .map(|(block, exec)| output(block, exec, encoding))
        .collect::<Result<Vec<ExecOutput>, String>>()?;
    Ok(Parsed::Poll(JobPoll::Done(outputs)))
}

/// One command's [`ExecOutput`] from its block.
fn output(block: &Block, exec: &Exec, encoding: &str) -> Result<ExecOutput, String> {
    let [status, seconds, start, end, out_size, err_size] = block.head.as_slice() else {
        return Err(format!("command line {:?}", block.head));
    };
    let number = |text: &str| text.parse::<u64>().map_err(|_| format!("`{text}` is not a number"));
    let status: i32 = status.parse().map_err(|_| format!("status `{status}`"))?;
    let seconds = number(seconds)?;
    let duration_ms = millis(end).saturating_sub(millis(start));
    let (stdout, cut_out) = tail(decode(&block.out, encoding)?, number(out_size)?, exec.max_output_bytes);
    let (stderr, cut_err) = tail(decode(&block.err, encoding)?, number(err_size)?, exec.max_output_bytes);
    // `timeout -s KILL` (and the watchdog) end a command with 137 (coreutils'
    // `timeout` 124 with other signals); a status like that before the
    // deadline is the command's own. Start and end are taken outside the
    // command, so the measured time is never shorter than the run.
    let timed_out = matches!(status, 124 | 137) && duration_ms >= seconds.saturating_mul(1000);
    Ok(ExecOutput {
        exit_code: if timed_out { -1 } else { status },
        stdout,
        stderr,
        duration_ms,
        truncated_bytes: cut_out + cut_err,
        timed_out,
    })
}

/// Milliseconds since the epoch of a `date +%s%N` stamp; a `date` without
/// `%N` (busybox) printed the seconds and something that is not a digit.
fn millis(stamp: &str) -> u64 {
    let digits: String = stamp.chars().take_while(char::is_ascii_digit).collect();
    let value: u64 = digits.parse().unwrap_or(0);
    if digits.len() == stamp.len() && digits.len() > 12 { value / 1_000_000 } else { value.saturating_mul(1000) }
}

fn decode(text: &str, encoding: &str) -> Result<Vec<u8>, String> {
    match encoding {
        "base64" => {
            // `base64` wraps its output at 76 columns: the line breaks go first.
            let packed: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
            STANDARD.decode(packed).map_err(|e| format!("base64: {e}"))
        }
        "hex" => {
            let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
            if !digits.len().is_multiple_of(2) {
                return Err("odd number of hex digits".into());
            }
            Ok(digits
                .chunks(2)
                .map(|pair| {
                    let value = |d: u8| (d as char).to_digit(16).unwrap_or(0) as u8;
                    value(pair[0]) << 4 | value(pair[1])
                })
                .collect())
        }
        other => Err(format!("unknown encoding `{other}`")),
    }
}

/// The kept tail of a stream of `total` bytes as text, and the bytes
/// dropped: at most `max` are kept, and a cut never leaves half a UTF-8
/// character at the start (its continuation bytes count as dropped).
fn tail(mut bytes: Vec<u8>, total: u64, max: u64) -> (String, u64) {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    if bytes.len() > max {
        bytes.drain(..bytes.len() - max);
    }
    let mut dropped = total.saturating_sub(bytes.len() as u64);
    if dropped > 0 {
        let partial = bytes.iter().take(3).take_while(|b| (**b & 0xC0) == 0x80).count();
        bytes.drain(..partial);
        dropped += partial as u64;
    }
    (String::from_utf8_lossy(&bytes).into_owned(), dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(argv: &[&str], max: u64) -> Exec {
        Exec {
            argv: argv.iter().map(|a| (*a).to_owned()).collect(),
            cwd: String::new(),
            timeout_ms: 5_000,
            max_output_bytes: max,
            env: BTreeMap::new(),
        }
    }

    /// The poll recognises the runner by the line that recorded it.
    #[test]
    fn both_scripts_name_a_process_alike() {
        let line = |script: &str| script.lines().find(|l| l.starts_with("_id() {")).map(str::to_owned);
        assert!(line(RUN_SCRIPT).is_some());
        assert_eq!(line(RUN_SCRIPT), line(POLL_SCRIPT));
    }

    #[test]
    fn job_ids() {
        for good in ["a", "checks-0123abcd-a1-s9", "A.b_c-9", &"x".repeat(64)] {
            assert!(is_job_id(good), "{good}");
        }
        for bad in ["", ".", "..", "a/b", "a b", "é", "a\0", &"x".repeat(65), "$(x)"] {
            assert!(!is_job_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_fingerprint_names_the_commands_not_their_timeout() {
        let a = [exec(&["cargo", "test"], 10)];
        let mut later = a.clone();
        later[0].timeout_ms = 1;
        later[0].max_output_bytes = 99;
        assert_eq!(fingerprint(&a), fingerprint(&later));
        let mut other = a.clone();
        other[0].argv = vec!["cargo".into(), "testx".into()];
        assert_ne!(fingerprint(&a), fingerprint(&other));
        // Lengths are part of it: no two splits of one text collide.
        assert_ne!(fingerprint(&[exec(&["ab", "c"], 1)]), fingerprint(&[exec(&["a", "bc"], 1)]));
        let mut env = a.clone();
        env[0].env.insert("CI".into(), "1".into());
        assert_ne!(fingerprint(&a), fingerprint(&env));
        assert!(fingerprint(&a).starts_with("1-"), "{}", fingerprint(&a));
    }

    #[test]
    fn stamps_with_and_without_nanoseconds() {
        assert_eq!(millis("1796521410037732691"), 1_796_521_410_037);
        assert_eq!(millis("1796521505%N"), 1_796_521_505_000);
        assert_eq!(millis("1796521505"), 1_796_521_505_000);
        assert_eq!(millis(""), 0);
    }

    #[test]
    fn a_cut_tail_never_starts_inside_a_character() {
        // "é" is C3 A9: a cut after C3 leaves A9, which is dropped too.
        let (text, dropped) = tail(vec![0xA9, b'o', b'k'], 4, 3);
        assert_eq!((text.as_str(), dropped), ("ok", 2));
        let (text, dropped) = tail(b"whole".to_vec(), 5, 10);
        assert_eq!((text.as_str(), dropped), ("whole", 0));
        let (text, dropped) = tail(vec![0xFF, b'x'], 2, 10);
        assert_eq!((text.as_str(), dropped), ("\u{FFFD}x", 0));
    }

    fn report(encoding: &str, spec: &str, blocks: &[(&str, &str, &str)]) -> String {
        let mut text = format!("noise before\n@done {encoding} {} {spec}\n", blocks.len());
        for (head, out, err) in blocks {
            text.push_str(&format!("@cmd {head}\n@out\n{out}\n@err\n{err}\n"));
        }
        text + "@end\n"
    }

    #[test]
    fn reports_parse_in_both_encodings() {
        let execs = [exec(&["a"], 100), exec(&["b"], 100)];
        let spec = fingerprint(&execs);
        let text = report(
            "base64",
            &spec,
            &[
                ("3 5 1000000000000000000 1000000001500000000 6 0", "aGVsbG8K", ""),
                ("137 1 1000000000000000000 1000000001000000000 0 2", "", "/w=="),
            ],
        );
        let Ok(Parsed::Poll(JobPoll::Done(outs))) = parse_poll(&text, &execs, &spec) else { panic!("{text}") };
        assert_eq!((outs[0].exit_code, outs[0].stdout.as_str(), outs[0].duration_ms), (3, "hello\n", 1500));
        assert!(!outs[0].timed_out);
        assert_eq!((outs[1].exit_code, outs[1].timed_out, outs[1].stderr.as_str()), (-1, true, "\u{FFFD}"));
        let text = report("hex", &spec, &[(" 0 5 10 10 2 0", " 68 69", ""), ("137 9 10 12 0 0", "", "")]);
        let Ok(Parsed::Poll(JobPoll::Done(outs))) = parse_poll(&text, &execs, &spec) else { panic!("{text}") };
        assert_eq!(outs[0].stdout, "hi");
        // 137 before its deadline (2 s of 9): the command's own status.
        assert_eq!((outs[1].exit_code, outs[1].timed_out), (137, false));
    }

    #[test]
    fn cut_or_foreign_reports_are_refused() {
        let execs = [exec(&["a"], 100)];
        let spec = fingerprint(&execs);
        let whole = report("base64", &spec, &[("0 5 1 2 0 0", "", "")]);
        assert!(matches!(parse_poll(&whole, &execs, &spec), Ok(Parsed::Poll(JobPoll::Done(_)))));
        let cut = whole.trim_end().trim_end_matches("@end");
        assert!(parse_poll(cut, &execs, &spec).unwrap_err().contains("end marker"));
        let other = report("base64", "1-0000000000000000", &[("0 5 1 2 0 0", "", "")]);
        assert!(matches!(parse_poll(&other, &execs, &spec), Ok(Parsed::OtherCommands(_))));
        assert!(parse_poll("", &execs, &spec).is_err());
        assert!(parse_poll("@what\n", &execs, &spec).is_err());
        assert!(matches!(parse_poll("@running\n", &execs, &spec), Ok(Parsed::Poll(JobPoll::Running))));
        let Ok(Parsed::Poll(JobPoll::Lost(why))) = parse_poll("@lost exited\n", &execs, &spec) else { panic!() };
        assert!(why.contains("killed"), "{why}");
    }

    /// The scripts run for real, by a provider whose exec is a local
    /// process with a `PATH` of chosen tools only: dash without `timeout`,
    /// `base64` and `setsid` (the watchdog, `od` hex and the plain
    /// background paths), and busybox alone (its `sh`, `timeout`, and a
    /// `date` without `%N`) where it is installed.
    mod local {
        use std::path::PathBuf;
        use std::time::{Duration, Instant};

        use super::*;
        use crate::checkout::Provision;
        use crate::provider::{Provisioned, SandboxProvider};
        use crate::request::{ProviderKind, SandboxRequest};

        struct Dir(PathBuf);

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }

        struct Local {
            root: PathBuf,
            tmp: PathBuf,
            bin: PathBuf,
        }

        impl SandboxProvider for Local {
            fn kind(&self) -> ProviderKind {
                ProviderKind::Custom
            }
            async fn provision(&self, _: &SandboxRequest, _: &Provision<'_>) -> Result<Provisioned, ProviderError> {
                unreachable!("not provisioned in this test")
            }
            async fn exec(&self, _: &SandboxRef, exec: &Exec) -> Result<ExecOutput, ProviderError> {
                let program = self.bin.join(&exec.argv[0]);
                let out = std::process::Command::new(program)
                    .args(&exec.argv[1..])
                    .current_dir(self.root.join(&exec.cwd))
                    .env_clear()
                    .env("PATH", &self.bin)
                    .env("TMPDIR", &self.tmp)
                    .envs(&exec.env)
                    .stdin(std::process::Stdio::null())
                    .output()
                    .expect("local exec");
                Ok(ExecOutput {
                    exit_code: out.status.code().unwrap_or(-1),
                    stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                    stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                    ..ExecOutput::default()
                })
            }
            async fn read_file(&self, _: &SandboxRef, _: &str) -> Result<Vec<u8>, ProviderError> {
                unreachable!()
            }
            async fn write_file(&self, _: &SandboxRef, _: &str, _: &[u8]) -> Result<(), ProviderError> {
                unreachable!()
            }
            async fn stop(&self, _: &str) -> Result<(), ProviderError> {
                Ok(())
            }
        }

        fn which(tool: &str) -> Option<PathBuf> {
            std::env::var_os("PATH")
                .into_iter()
                .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
                .map(|dir| dir.join(tool))
                .find(|candidate| candidate.is_file())
        }

        /// A sandbox whose `PATH` holds `tools`, each a link to `target(tool)`.
        fn sandbox(name: &str, tools: &[&str], target: impl Fn(&str) -> PathBuf) -> (Dir, Local) {
            let base = std::env::temp_dir().join(format!("agent-zero-jobs-unit-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&base);
            let local = Local { root: base.join("checkout"), tmp: base.join("tmp"), bin: base.join("bin") };
            for dir in [&local.root, &local.tmp, &local.bin] {
                std::fs::create_dir_all(dir).unwrap();
            }
            std::fs::create_dir_all(local.root.join("sub")).unwrap();
            for tool in tools {
                std::os::unix::fs::symlink(target(tool), local.bin.join(tool)).unwrap();
            }
            (Dir(base), local)
        }

        fn command(argv: &[&str], timeout_ms: u64) -> Exec {
            Exec { timeout_ms, ..exec(argv, 64) }
        }

        fn run_job(local: &Local) {
            let sandbox = SandboxRef { external_id: "local".into(), root: String::new() };
            let waits = "while [ ! -f ../go ]; do sleep 0.05; done; pwd; printf '%s' \"$LANG\" >&2; exit 3";
            let mut in_sub = command(&["sh", "-c", waits], 20_000);
            in_sub.cwd = "sub".into();
            in_sub.env.insert("LANG".into(), "C; $(touch pwned) 'q'".into());
            let execs = [
                in_sub,
                command(&["printf", "<%s>", "a b", "$(touch pwned)", "x;touch pwned", "l1\nl2", ""], 5_000),
                command(&["sleep", "30"], 1_000),
                command(&["sh", "-c", "printf '\\377\\376'; head -c 200 /dev/zero | tr '\\0' x; echo END"], 5_000),
                command(&["no-such-program-0c0ffee"], 5_000),
            ];
            let started = Instant::now();
            agent_zero_ports::block_on(local.start_job(&sandbox, "job-1", &execs)).unwrap();
            assert!(started.elapsed() < Duration::from_secs(1), "the start waited on the job: {:?}", started.elapsed());
            agent_zero_ports::block_on(local.start_job(&sandbox, "job-1", &execs)).unwrap();
            for _ in 0..3 {
                let poll = agent_zero_ports::block_on(local.poll_job(&sandbox, "job-1", &execs)).unwrap();
                assert_eq!(poll, JobPoll::Running);
            }
            std::fs::write(local.root.join("go"), "").unwrap();
            let deadline = Instant::now() + Duration::from_secs(30);
            let outs = loop {
                match agent_zero_ports::block_on(local.poll_job(&sandbox, "job-1", &execs)).unwrap() {
                    JobPoll::Done(outs) => break outs,
                    JobPoll::Running => assert!(Instant::now() < deadline, "still running at the deadline"),
                    JobPoll::Lost(why) => panic!("lost: {why}"),
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            assert_eq!(outs.len(), execs.len());
            assert_eq!(outs[0].exit_code, 3, "{:?}", outs[0]);
            assert!(outs[0].stdout.trim_end().ends_with("/checkout/sub"), "{:?}", outs[0]);
            assert_eq!(outs[0].stderr, "C; $(touch pwned) 'q'");
            assert_eq!(outs[1].stdout, "<a b><$(touch pwned)><x;touch pwned><l1\nl2><>");
            assert_eq!((outs[1].exit_code, outs[1].timed_out), (0, false));
            assert_eq!((outs[2].exit_code, outs[2].timed_out), (-1, true), "{:?}", outs[2]);
            assert!((1_000..10_000).contains(&outs[2].duration_ms), "{:?}", outs[2]);
            // 2 + 200 + 4 bytes, 64 kept: the tail, the cut counted.
            assert_eq!(outs[3].stdout, format!("{}END\n", "x".repeat(60)));
            assert_eq!(outs[3].truncated_bytes, 206 - 64);
            assert_eq!(outs[4].exit_code, 127, "{:?}", outs[4]);
            assert!(!local.root.join("pwned").exists() && !local.root.join("sub/pwned").exists());
            let runs = std::fs::read_dir(local.tmp.join("agent-zero-jobs")).unwrap().count();
            assert_eq!(runs, 1);
            let never = agent_zero_ports::block_on(local.poll_job(&sandbox, "job-2", &execs)).unwrap();
            assert!(matches!(never, JobPoll::Lost(_)), "{never:?}");
        }

        /// A live pid that is not the runner's (a pid reused after it died,
        /// or after the sandbox restarted with its disk) is not running.
        #[test]
        fn a_reused_pid_is_not_the_runner() {
            let mut tools = COMMON.to_vec();
            tools.extend(["timeout", "base64", "od", "setsid", "true"]);
            let (_dir, local) = sandbox("reused", &tools, |tool| which(tool).unwrap_or_else(|| panic!("{tool}")));
            let sandbox = SandboxRef { external_id: "local".into(), root: String::new() };
            let execs = [command(&["sh", "-c", "while [ ! -f go ]; do sleep 0.05; done"], 20_000)];
            let poll = || agent_zero_ports::block_on(local.poll_job(&sandbox, "job-r", &execs)).unwrap();
            agent_zero_ports::block_on(local.start_job(&sandbox, "job-r", &execs)).unwrap();
            let ident = local.tmp.join("agent-zero-jobs/job-r/ident");
            let deadline = Instant::now() + Duration::from_secs(10);
            while std::fs::read_to_string(&ident).unwrap_or_default().is_empty() {
                assert!(Instant::now() < deadline, "the runner never recorded who it is");
                std::thread::sleep(Duration::from_millis(20));
            }
            assert_eq!(poll(), JobPoll::Running);
            let recorded = std::fs::read_to_string(&ident).unwrap();
            std::fs::write(&ident, "another-boot-12345\n").unwrap();
            assert!(matches!(poll(), JobPoll::Lost(_)), "a pid of someone else read as the runner");
            std::fs::write(&ident, recorded).unwrap();
            assert_eq!(poll(), JobPoll::Running);
            std::fs::write(local.root.join("go"), "").unwrap();
            let deadline = Instant::now() + Duration::from_secs(20);
            while poll() == JobPoll::Running {
                assert!(Instant::now() < deadline, "still running");
                std::thread::sleep(Duration::from_millis(50));
            }
            assert!(matches!(poll(), JobPoll::Done(outs) if outs[0].exit_code == 0));
        }

        const COMMON: &[&str] =
            &["sh", "mkdir", "cat", "date", "sleep", "mv", "tail", "wc", "printf", "head", "tr", "pwd"];

        #[test]
        fn dash_without_timeout_base64_or_setsid() {
            let Some(dash) = which("dash").or_else(|| which("sh")) else { panic!("no sh") };
            let mut tools = COMMON.to_vec();
            tools.extend(["od", "true"]);
            let (_dir, local) = sandbox("dash", &tools, |tool| {
                if tool == "sh" { dash.clone() } else { which(tool).unwrap_or_else(|| panic!("{tool}")) }
            });
            run_job(&local);
            assert!(!local.bin.join("timeout").exists() && !local.bin.join("base64").exists());
        }

        #[test]
        fn busybox_alone() {
            let Some(busybox) = which("busybox") else {
                eprintln!("busybox is not installed: its run of the job scripts is left out");
                return;
            };
            let mut tools = COMMON.to_vec();
            tools.extend(["timeout", "base64", "od", "setsid", "true"]);
            let (_dir, local) = sandbox("busybox", &tools, |_| busybox.clone());
            run_job(&local);
        }

        #[test]
        fn the_system_shell_with_its_tools() {
            let mut tools = COMMON.to_vec();
            tools.extend(["timeout", "base64", "od", "setsid", "true"]);
            let (_dir, local) = sandbox("system", &tools, |tool| which(tool).unwrap_or_else(|| panic!("{tool}")));
            run_job(&local);
        }
    }
}
