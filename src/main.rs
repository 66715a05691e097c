//! The `cchist` binary: parse arguments, run the command, map the outcome to an exit code.

mod cli;
mod cmd;

use std::process::ExitCode;

use clap::Parser;

use cchist::error::ExitStatus;

// A session pipeline allocates a header per record and frees them all at the end; mimalloc
// does that markedly faster than glibc's allocator (see the README's performance section).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_t` (v2 and v3 agree; libmimalloc-sys
/// names only some options).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    // Never hand freed memory back to the OS (as glibc's allocator mostly does not): a session
    // pipeline frees and re-allocates tens of MB between stages, and purging it costs page
    // faults that zero huge pages again, ~25% of a `run -p share`. Peak RSS stays at the
    // peak of live data (README: at most twice the file plus 100 bytes a record; measured).
    // SAFETY: setting an option of the allocator in use; no other thread runs yet.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1);
    }
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
