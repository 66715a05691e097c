//! The `cchist` binary: parse arguments, run the command, map the outcome to an exit code.

mod cli;
mod cmd;

use std::process::ExitCode;

use clap::Parser;

use cchist::error::ExitStatus;

fn main() -> ExitCode {
    // Past `ulimit -f`, a write must fail with EFBIG (an error cchist reports, removing its
    // temp file) instead of SIGXFSZ killing the process and leaving the temp file behind.
    // SAFETY: setting a signal to SIG_IGN before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    let args = cli::Cli::parse();
    let status = match cmd::dispatch(args.command) {
        Ok(s) => s,
        Err(e) => {
            if is_broken_pipe(&e) {
                // Like other Unix filters: a closed pipe (`| head`) is not an error.
                ExitStatus::Ok
            } else {
                eprintln!("cchist: error: {e:#}");
                ExitStatus::Error
            }
        }
    };
    ExitCode::from(status as u8)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
