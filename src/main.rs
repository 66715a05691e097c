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

/// `mi_option_purge_delay` in the `mi_option_t` of mimalloc.h (v2 and v3 agree;
/// libmimalloc-sys names only some options).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    // Allocator settings, measured on `run -p share` (README, Performance):
    // - never hand freed memory back to the OS (glibc's allocator mostly does not either): a
    //   session pipeline frees and re-allocates tens of MB between stages, and purging made
    //   every reuse fault in zeroed pages again (~10% of the run). Peak RSS stays the peak of
    //   live data;
    // - no transparent huge pages (mimalloc asks for them): a touched 2 MB page counts whole
    //   in RSS, which took streaming pipelines past their 32 MB promise and gained no speed.
    //   The prctl flag affects this process only; transparent huge pages are a Linux feature
    //   (elsewhere there is nothing to turn off).
    // SAFETY: FFI calls with plain integer arguments, before any other thread starts.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1);
        #[cfg(target_os = "linux")]
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    // Past `ulimit -f`, a write must fail with EFBIG (an error cchist reports, removing its
    // temp file) instead of SIGXFSZ killing the process and leaving the temp file behind.
    // SAFETY: setting a signal to SIG_IGN before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // Inputs are memory-mapped (read only, as ripgrep does) for speed; an in-place write reads
    // its locked file instead. If another process truncates a mapped input while a stdout or
    // `--out-dir` run reads it, the next touch of a vanished page raises SIGBUS: end with a
    // message and exit 2 (the output is incomplete; no input was written), never a signal
    // death that a script reads as a crash.
    // SAFETY: installing a handler before any thread starts; it calls only write(2) and
    // _exit(2), both async-signal-safe.
    #[cfg(unix)]
    unsafe {
        extern "C" fn on_sigbus(_: libc::c_int) {
            const MSG: &[u8] = b"cchist: error: an input file was truncated by another process while it was read; the output is incomplete and no input was changed; run again once nothing else writes it\n";
            // SAFETY: write(2) and _exit(2) are async-signal-safe.
            unsafe {
                libc::write(2, MSG.as_ptr().cast(), MSG.len());
                libc::_exit(2);
            }
        }
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_sigbus as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut());
    }
    // `println!` panics when stdout is a closed pipe; like the other outputs, that is the
    // reader having had enough (`| head`), not an error.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        default_hook(info)
    }));
    // `COMPLETE=bash cchist` prints the shell's registration; the shell then calls back with
    // COMPLETE set to complete a command line (pipelines and session ids included). Before
    // anything else writes to stdout.
    clap_complete::CompleteEnv::with_factory(<cli::Cli as clap::CommandFactory>::command)
        .bin("cchist")
        .complete();
    let args = match cli::paths_not_flags(std::env::args_os().collect()) {
        Ok(args) => match cli::Cli::try_parse_from(args) {
            Ok(a) => a,
            Err(e) => return usage_error(e),
        },
        Err(msg) => {
            eprintln!(
                "cchist: error: {}",
                cchist::findings::report::printable_text(&msg)
            );
            return ExitCode::from(ExitStatus::Error as u8);
        }
    };
    cmd::color::set(args.color);
    let status = match cli::dispatch(args.command) {
        Ok(s) => s,
        Err(e) => {
            if is_broken_pipe(&e) {
                // Like other Unix filters: a closed pipe (`| head`) is not an error.
                ExitStatus::Ok
            } else {
                // The message may name a file or quote a transcript: no control characters.
                // Nor a secret: a value quoted from a document (an operations document's
                // label, a record's uuid) is redacted as the hook's log redacts it.
                let msg = chain_text(&e);
                eprintln!(
                    "cchist: error: {}",
                    cchist::findings::report::printable_text(&cchist::stages::redact::shown_text(
                        &msg
                    ))
                );
                ExitStatus::Error
            }
        }
    };
    ExitCode::from(status as u8)
}

/// A command line clap refused, in cchist's one error style (`cchist: error: …`, exit 2);
/// help and version print as clap prints them.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let text = e.render().to_string();
    let text = text
        .trim_end()
        .strip_prefix("error: ")
        .unwrap_or(text.trim_end());
    eprintln!(
        "cchist: error: {}",
        cchist::findings::report::printable_text(text)
    );
    ExitCode::from(ExitStatus::Error as u8)
}

/// The error and its causes, `a: b: c`, each said once: the library's errors already end
/// with their source (`x.jsonl: stat: No such file or directory`), which `{:#}` would repeat.
fn chain_text(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if msg.ends_with(&text) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&text);
    }
    msg
}

/// Whether the error is, somewhere in its chain, a write to a closed pipe: an I/O error, a JSON
/// serializer's I/O error, or the library's I/O error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(BrokenPipe))
            || matches!(
                c.downcast_ref::<cchist::error::Error>(),
                Some(cchist::error::Error::Io { source, .. }) if source.kind() == BrokenPipe
            )
    })
}
