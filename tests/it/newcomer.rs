//! Issue 32, "a newcomer's first hour, round 2": the mistakes a new user makes on a fresh
//! clone, through the binary. No silent exit 0 on a mistake: a CI gate that looked at nothing,
//! a path taken for a flag, a filter that matches nothing, a report cut short by `| head`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::common::{assert_code, cchist};

const ID: &str = "5b1f0000-0000-4000-8000-0000000000aa";

fn token() -> String {
    // Assembled at run time so the source itself holds no token-shaped string.
    format!("ghp_{}", "Qa9Xw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA7")
}

fn record(kind: &str, uuid: &str, parent: Option<&str>, text: &str) -> String {
    let mut v = crate::common::message_value(kind, uuid, parent, ID, text);
    v["cwd"] = "/home/dev/app".into();
    v.to_string() + "\n"
}

/// A config folder with one idle session of project `-home-dev-app` holding a secret.
struct Sandbox {
    _dir: tempfile::TempDir,
    root: PathBuf,
    session: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("claude");
        let project = root.join("projects/-home-dev-app");
        std::fs::create_dir_all(&project).unwrap();
        let session = project.join(format!("{ID}.jsonl"));
        let t = token();
        let main = record("user", "u1", None, &format!("deploy with {t} please"))
            + &record("assistant", "a1", Some("u1"), "done");
        std::fs::write(&session, main).unwrap();
        crate::common::age(&session, 3600);
        Sandbox {
            _dir: dir,
            root,
            session,
        }
    }

    fn cmd(&self) -> Command {
        let mut c = cchist();
        c.env("CLAUDE_CONFIG_DIR", &self.root)
            .env("HOME", self.root.parent().unwrap())
            .env_remove("CCHIST_REDACT_KEY")
            .env_remove("NO_COLOR");
        c
    }
}

fn out(c: &mut Command) -> Output {
    c.output().expect("run cchist")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `c` with `input` piped in.
fn piped(c: &mut Command, input: &[u8]) -> Output {
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// A pseudo-terminal's two ends: stdin of a child that must see a terminal.
fn pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain libc calls on a fresh descriptor; each fd is owned by one File.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0, "posix_openpt");
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let name = std::ffi::CStr::from_ptr(libc::ptsname(master)).to_owned();
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        assert!(slave >= 0, "open the pty's slave");
        (
            std::fs::File::from_raw_fd(master),
            std::fs::File::from_raw_fd(slave),
        )
    }
}

/// Runs `c` with a terminal as stdin, killed after 10 s (a command that waits on the terminal
/// would hang the test otherwise).
fn on_terminal(c: &mut Command) -> Output {
    let (_master, slave) = pty();
    let child = c
        .stdin(Stdio::from(slave))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if rx.recv_timeout(std::time::Duration::from_secs(10)).is_err() {
            // SAFETY: signalling our own child by its id.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let o = child.wait_with_output().unwrap();
    let _ = tx.send(());
    o
}

// 1. No path, stdin not a terminal: never a clean pass over nothing.

#[test]
fn check_and_validate_with_no_path_and_dev_null_stdin_fail() {
    let s = Sandbox::new();
    for cmd in ["check", "validate"] {
        let o = out(s.cmd().arg(cmd)); // stdin is /dev/null
        assert_code(&o, 2);
        let e = stderr(&o);
        assert!(e.contains("stdin") && e.contains("--all"), "{cmd}: {e}");
    }
}

#[test]
fn check_and_validate_with_no_path_and_empty_pipe_fail() {
    let s = Sandbox::new();
    for cmd in ["check", "validate"] {
        let o = piped(s.cmd().arg(cmd), b"");
        assert_code(&o, 2);
        assert!(
            stderr(&o).contains("stdin was empty"),
            "{cmd}: {}",
            stderr(&o)
        );
    }
    // A transcript piped in is still checked.
    let data = std::fs::read(&s.session).unwrap();
    assert_code(&piped(s.cmd().arg("check"), &data), 1);
    assert_code(&piped(s.cmd().arg("validate"), &data), 0);
}

#[test]
fn filters_with_no_path_and_dev_null_stdin_fail() {
    let s = Sandbox::new();
    let o = out(s.cmd().arg("redact"));
    assert_code(&o, 2);
    assert!(stderr(&o).contains("stdin"), "{}", stderr(&o));
}

// 6. On a terminal nothing waits silently: check and validate scan the projects, filters and
// hooks refuse with what to pass.

#[test]
fn no_path_on_a_terminal_never_waits() {
    let s = Sandbox::new();
    let o = on_terminal(s.cmd().arg("validate"));
    assert_code(&o, 0);
    assert!(stderr(&o).contains("stdin is a terminal"), "{}", stderr(&o));
    for args in [
        &["redact"][..],
        &["run", "-p", "identity"],
        &["drop-tool-noise"],
        &["hook"],
    ] {
        let o = on_terminal(s.cmd().args(args));
        assert_code(&o, 2);
        assert!(stderr(&o).contains("terminal"), "{args:?}: {}", stderr(&o));
    }
}

// 2. A `-name` argument that names nothing is an error naming it, never help.

#[test]
fn a_dashed_path_that_does_not_exist_is_an_error_not_help() {
    let s = Sandbox::new();
    for args in [
        &["check", "-home-dev-webapp"][..],
        &["validate", "-home-dev-webapp"],
        &["redact", "-i", "-home-dev-webapp"],
    ] {
        let o = out(s.cmd().args(args));
        assert_code(&o, 2);
        let e = stderr(&o);
        assert!(
            e.contains("-home-dev-webapp") && !stdout(&o).contains("Usage"),
            "{args:?}: {e}"
        );
        assert!(!e.contains("Usage"), "{args:?} printed help: {e}");
    }
    // Short flag clusters and flags with values attached still work.
    assert_code(&out(s.cmd().args(["check", "-qj1"]).arg(&s.session)), 1);
}

// 4. `--backup` takes a value only with `=`.

#[test]
fn backup_does_not_swallow_the_next_argument() {
    let s = Sandbox::new();
    let dir = s.session.parent().unwrap();
    let o = out(s.cmd().args(["redact", "--in-place", "--backup"]).arg(dir));
    assert_code(&o, 0);
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.contains(".cchist-bak.")),
        "no undo-able backup: {names:?}"
    );
    assert!(!std::fs::read_to_string(&s.session)
        .unwrap()
        .contains(&token()));
    // A suffix with `=`.
    let s = Sandbox::new();
    let o = out(s
        .cmd()
        .args(["redact", "--in-place", "--backup=.bak"])
        .arg(&s.session));
    assert_code(&o, 0);
    assert!(PathBuf::from(format!("{}.bak", s.session.display())).is_file());
}

// 5. Backups hold the secrets now, and both commands say so.

#[test]
fn redact_backup_says_the_backups_keep_the_secrets_and_check_counts_them_apart() {
    let s = Sandbox::new();
    let o = out(s
        .cmd()
        .args(["redact", "--in-place", "--backup"])
        .arg(&s.session));
    assert_code(&o, 0);
    assert!(
        stderr(&o).contains("backups keep the original"),
        "{}",
        stderr(&o)
    );
    let o = out(s.cmd().args(["check", "--all"]));
    assert_code(&o, 1);
    let e = stderr(&o);
    assert!(
        e.contains("in 1 cchist backup") && e.contains("cchist backups prune"),
        "{e}"
    );
}

// 8. `undo --all` restores sessions, never the settings.json of `hook install`.

#[test]
fn undo_all_leaves_settings_backups_alone() {
    let s = Sandbox::new();
    let settings = s.root.join("settings.json");
    std::fs::write(&settings, "{\"theme\": \"dark\"}\n").unwrap();
    assert_code(&out(s.cmd().args(["hook", "install"])), 0);
    let installed = std::fs::read_to_string(&settings).unwrap();
    assert!(installed.contains("cchist"), "{installed}");
    assert_code(
        &out(s
            .cmd()
            .args(["redact", "--in-place", "--backup"])
            .arg(&s.session)),
        0,
    );
    let o = out(s.cmd().args(["undo", "--all", "--since", "1h"]));
    assert_code(&o, 0);
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), installed);
    assert!(std::fs::read_to_string(&s.session)
        .unwrap()
        .contains(&token()));
    let o = out(s.cmd().args(["undo", "--list"]));
    assert!(!stdout(&o).contains("settings.json"), "{}", stdout(&o));
}

// 9. Bad filters are errors that say what exists.

#[test]
fn ls_with_an_unknown_project_fails_naming_the_projects() {
    let s = Sandbox::new();
    let o = out(s.cmd().args(["ls", "--project", "webapp"]));
    assert_code(&o, 2);
    assert!(stderr(&o).contains("-home-dev-app"), "{}", stderr(&o));
    assert_code(&out(s.cmd().args(["ls", "--project", "-home-dev-app"])), 0);
}

#[test]
fn a_mistyped_config_dir_fails() {
    let s = Sandbox::new();
    let wrong = s.root.with_file_name("claud");
    for args in [
        &["ls"][..],
        &["history", "list", "--project", "x", "--latest"],
    ] {
        let o = out(s.cmd().env("CLAUDE_CONFIG_DIR", &wrong).args(args));
        assert_code(&o, 2);
        assert!(
            stderr(&o).contains("CLAUDE_CONFIG_DIR"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

// 15. Exit codes the same with `--json` and a closed pipe; stages as objects.

#[test]
fn check_json_into_a_closed_pipe_still_exits_1() {
    let s = Sandbox::new();
    // Enough findings that the report outgrows a pipe buffer.
    let mut big = String::new();
    for i in 0..3000 {
        big += &record(
            "user",
            &format!("u{i}"),
            None,
            &format!("key {} here", token()),
        );
    }
    std::fs::write(&s.session, big).unwrap();
    let mut child = s
        .cmd()
        .args(["check", "--json"])
        .arg(&s.session)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut so = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    std::io::Read::read_exact(&mut so, &mut first).unwrap();
    drop(so);
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 1);
}

#[test]
fn run_json_gives_stages_as_objects() {
    let s = Sandbox::new();
    let o = out(s
        .cmd()
        .args(["run", "-p", "scrub", "--dry-run", "--json"])
        .arg(&s.session));
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let stages = &v["files"][0]["report"]["stages"];
    let first = &stages[0];
    assert!(
        first.is_object() && first["stage"].is_string(),
        "stages: {stages}"
    );
}

#[test]
fn hook_status_and_backups_prune_speak_json() {
    let s = Sandbox::new();
    for args in [
        &["hook", "status", "--json"][..],
        &["backups", "prune", "--older-than", "30d", "--json"],
    ] {
        let o = out(s.cmd().args(args));
        assert_code(&o, 0);
        serde_json::from_slice::<serde_json::Value>(&o.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&o)));
    }
}

// 18. A fork's resume line works from anywhere.

#[test]
fn fork_prints_a_resume_line_that_changes_to_the_project() {
    let s = Sandbox::new();
    let o = out(s.cmd().args(["redact", "--fork"]).arg(&s.session));
    assert_code(&o, 0);
    let line = stdout(&o);
    assert!(
        line.starts_with("cd /home/dev/app && claude --resume "),
        "{line}"
    );
}

// 19. One OS error said once; plurals.

#[test]
fn an_os_error_is_said_once_and_counts_are_plural_only_when_they_should_be() {
    let s = Sandbox::new();
    let o = out(s.cmd().args(["check", "/nonexistent/x.jsonl"]));
    assert_code(&o, 2);
    let e = stderr(&o);
    assert_eq!(e.matches("No such file").count(), 1, "{e}");
    let o = out(s.cmd().arg("validate").arg(&s.session));
    assert!(stderr(&o).contains("1 file valid"), "{}", stderr(&o));
}

// 3. Baselines travel: keyed by a key beside them (or CCHIST_REDACT_KEY), not the machine's.

#[test]
fn a_baseline_written_under_one_home_matches_under_another() {
    let s = Sandbox::new();
    let base = s.root.parent().unwrap().join("baseline.json");
    let laptop = tempfile::tempdir().unwrap();
    let ci = tempfile::tempdir().unwrap();
    let o = out(s
        .cmd()
        .env("HOME", laptop.path())
        .env_remove("XDG_CONFIG_HOME")
        .arg("check")
        .arg(&s.session)
        .arg("--write-baseline")
        .arg(&base));
    assert_code(&o, 0);
    assert!(stderr(&o).contains("baseline.json.key"), "{}", stderr(&o));
    let o = out(s
        .cmd()
        .env("HOME", ci.path())
        .env_remove("XDG_CONFIG_HOME")
        .arg("check")
        .arg(&s.session)
        .arg("--baseline")
        .arg(&base));
    assert_code(&o, 0);
    // The same with the key in the environment instead.
    let key = "k".repeat(40);
    let base2 = s.root.parent().unwrap().join("b2.json");
    let run = |home: &std::path::Path, flag: &str, file: &std::path::Path| {
        out(s
            .cmd()
            .env("HOME", home)
            .env_remove("XDG_CONFIG_HOME")
            .env("CCHIST_REDACT_KEY", &key)
            .arg("check")
            .arg(&s.session)
            .arg(flag)
            .arg(file))
    };
    let o = run(laptop.path(), "--write-baseline", &base2);
    assert!(stderr(&o).contains("CCHIST_REDACT_KEY"), "{}", stderr(&o));
    assert_code(&run(ci.path(), "--baseline", &base2), 0);
}

// 7. Ctrl-C in a bulk in-place run: stops between files, leaves no temp, says how to undo.

#[test]
fn sigint_in_a_bulk_run_stops_cleanly_and_says_how_to_undo() {
    let s = Sandbox::new();
    let dir = s.session.parent().unwrap().to_path_buf();
    let data = std::fs::read(&s.session).unwrap();
    // Each in-place write syncs to disk: a few hundred files take seconds.
    for i in 0..400 {
        let p = dir.join(format!("5b1f0000-0000-4000-8000-{i:012}.jsonl"));
        std::fs::write(&p, &data).unwrap();
        crate::common::age(&p, 3600);
    }
    let child = s
        .cmd()
        .args(["redact", "-i", "--backup", "-j", "1"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Signal once the run has written something.
    let backups = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".cchist-bak.")
            })
            .count()
    };
    let t0 = std::time::Instant::now();
    while backups() == 0 && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: signalling our own child by its id.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let e = stderr(&o);
    assert_code(&o, 2);
    assert!(e.contains("interrupted after"), "{e}");
    let done = backups();
    assert!(
        done > 0 && done < 401,
        "{done} backups: the run did not stop"
    );
    // Nothing but sessions and their backups: no temp file.
    for n in std::fs::read_dir(&dir).unwrap() {
        let n = n.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            n.ends_with(".jsonl") || n.contains(".cchist-bak."),
            "left behind: {n}"
        );
    }
    // The undo line it printed restores every file it changed.
    let since = e
        .split("undo --all --since ")
        .nth(1)
        .and_then(|r| r.split('`').next())
        .unwrap_or_else(|| panic!("no undo line: {e}"))
        .to_string();
    let o = out(s.cmd().args(["undo", "--all", "--since", &since]));
    assert_code(&o, 0);
    for f in std::fs::read_dir(&dir).unwrap() {
        let p = f.unwrap().path();
        if p.extension().is_some_and(|x| x == "jsonl") {
            assert!(
                std::fs::read_to_string(&p).unwrap().contains(&token()),
                "{} not restored",
                p.display()
            );
        }
    }
}

// 13. `-q` as grep and rg mean it: nothing but errors, the exit status tells; on every
// command that reports.

#[test]
fn quiet_prints_nothing_and_the_exit_status_tells() {
    let s = Sandbox::new();
    let o = out(s.cmd().args(["check", "-q"]).arg(&s.session));
    assert_code(&o, 1);
    assert_eq!((stdout(&o), stderr(&o)), (String::new(), String::new()));
    let o = out(s.cmd().args(["validate", "-q"]).arg(&s.session));
    assert_code(&o, 0);
    assert_eq!((stdout(&o), stderr(&o)), (String::new(), String::new()));
    let o = out(s.cmd().args(["ls", "-q"]));
    assert_code(&o, 0);
    assert_eq!((stdout(&o), stderr(&o)), (String::new(), String::new()));
    let o = out(s.cmd().args(["redact", "-q", "-i"]).arg(&s.session));
    assert_code(&o, 0);
    assert_eq!(stderr(&o), "");
    // Errors still show.
    let o = out(s.cmd().args(["check", "-q", "/nonexistent/x.jsonl"]));
    assert_code(&o, 2);
    assert!(stderr(&o).contains("error"), "{}", stderr(&o));
}

// 12. `--include -home-…` without `=`; `*` stops at `/` as in rg and fd.

#[test]
fn include_takes_a_dashed_glob_and_star_stays_in_one_folder() {
    let s = Sandbox::new();
    let projects = s.root.join("projects");
    let nested = projects.join("-home-dev-app/deeper");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::copy(&s.session, nested.join("other.jsonl")).unwrap();
    let o = out(s
        .cmd()
        .args(["validate", "--include", "-home-dev-app/*.jsonl"])
        .arg(&projects));
    assert_code(&o, 0);
    assert!(stderr(&o).contains("1 file valid"), "{}", stderr(&o));
    // A glob without `/` matches names at any depth.
    let o = out(s
        .cmd()
        .args(["validate", "--include", "*.jsonl"])
        .arg(&projects));
    assert!(stderr(&o).contains("2 files valid"), "{}", stderr(&o));
}

// 16. Project-scope hooks leave the repository as they found it; status lists a file once.

#[test]
fn project_scope_install_and_uninstall_leave_the_working_tree_clean() {
    let s = Sandbox::new();
    let repo = tempfile::tempdir().unwrap();
    let names = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .map(|rd| {
                rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let run = |args: &[&str]| out(s.cmd().current_dir(repo.path()).args(args));
    assert_code(&run(&["hook", "install", "--scope", "project"]), 0);
    assert_code(&run(&["hook", "uninstall", "--scope", "project"]), 0);
    assert!(
        !repo.path().join(".claude/settings.json").exists(),
        "{:?}",
        names(&repo.path().join(".claude"))
    );
    // With settings of its own: back as they were, no backup file beside them.
    let dir = repo.path().join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.json"), "{\"model\": \"opus\"}\n").unwrap();
    assert_code(&run(&["hook", "install", "--scope", "project"]), 0);
    assert_code(&run(&["hook", "uninstall", "--scope", "project"]), 0);
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("settings.json")).unwrap()).unwrap();
    assert_eq!(doc, serde_json::json!({"model": "opus"}));
    assert_eq!(names(&dir), vec!["settings.json".to_string()]);
    // Run from the home folder, the project's settings are the user's: listed once.
    let o = out(s
        .cmd()
        .current_dir(repo.path())
        .env("CLAUDE_CONFIG_DIR", &dir)
        .args(["hook", "status"]));
    assert_code(&o, 0);
    assert_eq!(
        stdout(&o).matches("no cchist hook").count(),
        1,
        "{}",
        stdout(&o)
    );
}

// 19. One error style: a refused command line reads like every other error.

#[test]
fn usage_errors_read_like_every_other_error() {
    let s = Sandbox::new();
    for args in [&["ls", "--sort", "bogus"][..], &["check", "--nope"]] {
        let o = out(s.cmd().args(args));
        assert_code(&o, 2);
        assert!(
            stderr(&o).starts_with("cchist: error: "),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    // Help is still help.
    assert_code(&out(s.cmd().args(["check", "--help"])), 0);
}

// 10. A man page for every subcommand the top page refers to, with the sections a man page
// has.

#[test]
fn man_pages_exist_for_every_subcommand_with_exit_status_and_environment() {
    let s = Sandbox::new();
    let top = stdout(&out(s.cmd().arg("man")));
    let o = out(s.cmd().args(["man", "run"]));
    assert_code(&o, 0);
    let run = stdout(&o);
    assert!(run.contains(".TH cchist-run"), "{run}");
    for page in [&top, &run] {
        for section in ["EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"] {
            assert!(page.contains(section), "{section} missing");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    assert_code(&out(s.cmd().args(["man", "--out-dir"]).arg(dir.path())), 0);
    // Every cchist-X(1) the top page names is written.
    let names: Vec<String> = top
        .split("cchist\\-")
        .skip(1)
        .filter_map(|r| r.split_once("(1)").map(|(n, _)| n.replace("\\-", "-")))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    for name in names {
        assert!(
            dir.path().join(format!("cchist-{name}.1")).is_file(),
            "cchist-{name}(1) is referred to but not written"
        );
    }
    assert_code(&out(s.cmd().args(["man", "nope"])), 2);
}

// 14. Rows fit the terminal by display width: a CJK prompt takes two columns a character.

#[test]
fn history_and_ls_rows_fit_the_terminal_by_display_width() {
    use unicode_width::UnicodeWidthStr;
    let s = Sandbox::new();
    let cjk = "会话记录的安全转换工具".repeat(12);
    let data = record("user", "u1", None, &cjk) + &record("assistant", "a1", Some("u1"), "好");
    std::fs::write(&s.session, data).unwrap();
    for (cols, args) in [
        (80, &["history", "list", "-s", "5b1f0000"][..]),
        (80, &["ls"]),
        (200, &["history", "list", "-s", "5b1f0000"]),
    ] {
        let o = out(s.cmd().env("COLUMNS", cols.to_string()).args(args));
        assert_code(&o, 0);
        let text = stdout(&o);
        assert!(text.contains("会话"), "{args:?}: {text}");
        for line in text.lines() {
            assert!(line.width() <= cols, "{args:?} at {cols}: {line}");
        }
    }
}

// 11. Local times on the terminal, with their offset; RFC 3339 in every JSON document.

#[test]
fn times_are_local_with_an_offset_in_text_and_rfc3339_in_json() {
    let s = Sandbox::new();
    // POSIX TZ form: needs no time zone database. 10:00 UTC is 19:00 at +09:00.
    let o = out(s
        .cmd()
        .env("TZ", "JST-9")
        .args(["history", "list", "-s", "5b1f0000"]));
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains("2026-04-01 19:00 +09:00"),
        "{}",
        stdout(&o)
    );
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_775_037_600); // 2026-04-01T10:00Z
    crate::common::set_mtime(&s.session, at);
    let o = out(s.cmd().env("TZ", "JST-9").arg("ls"));
    assert!(
        stdout(&o).contains("2026-04-01 19:00 +09:00") && stdout(&o).contains(" 1 turn "),
        "{}",
        stdout(&o)
    );
    assert_code(
        &out(s.cmd().args(["redact", "-i", "--backup"]).arg(&s.session)),
        0,
    );
    let rfc3339 = |t: &str| t.len() >= 20 && t.as_bytes()[10] == b'T' && t.ends_with('Z');
    let o = out(s.cmd().args(["undo", "--list", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = v[0]["time"].as_str().unwrap_or_default().to_string();
    assert!(rfc3339(&t), "undo --list --json time: {t}");
    let o = out(s.cmd().args(["ls", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = v[0]["modified"].as_str().unwrap_or_default().to_string();
    assert!(rfc3339(&t), "ls --json modified: {t}");
}

/// Item 17: completion knows what only the binary knows. Through clap_complete's dynamic
/// protocol (what `source <(COMPLETE=bash cchist)` registers): `--pipeline` offers the shipped
/// pipeline names, `-s` the session ids under the config folder (newest first), and
/// `COMPLETE=bash cchist` prints the shell's registration.
#[test]
fn completion_offers_shipped_pipelines_and_session_ids() {
    let complete = |env: &[(&str, &std::path::Path)], words: &[&str]| {
        let mut c = crate::common::cchist();
        c.env("COMPLETE", "bash")
            .env("_CLAP_COMPLETE_INDEX", (words.len() - 1).to_string())
            .env("_CLAP_IFS", "\n")
            .arg("--")
            .args(words);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let got = complete(&[], &["cchist", "run", "--pipeline", ""]);
    for name in ["scrub", "share", "compact", "repair"] {
        assert!(got.iter().any(|l| l == name), "{name} not offered: {got:?}");
    }
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("projects").join("-home-dev-app");
    std::fs::create_dir_all(&dir).unwrap();
    let (old, new) = (
        "8c1f9a1e-2b3c-4d5e-9f00-112233445566",
        "0d6b2f55-7a1c-4e3b-8f00-aabbccddeeff",
    );
    for id in [old, new] {
        std::fs::write(dir.join(format!("{id}.jsonl")), "{}\n").unwrap();
    }
    crate::common::age(&dir.join(format!("{old}.jsonl")), 3600);
    let got = complete(
        &[("CLAUDE_CONFIG_DIR", root.path())],
        &["cchist", "redact", "-s", ""],
    );
    assert_eq!(&got[..2], &[new.to_string(), old.to_string()], "{got:?}");
    let out = crate::common::cchist()
        .env("COMPLETE", "bash")
        .output()
        .unwrap();
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(
        script.contains("complete") && script.contains("cchist"),
        "{script}"
    );
}

// 15. A dry run's report is its output: on stdout, as `--diff`'s; the advice on stderr.

#[test]
fn a_dry_run_report_is_on_stdout_like_a_diff() {
    let s = Sandbox::new();
    let second = s
        .session
        .with_file_name("5b1f0000-0000-4000-8000-0000000000ab.jsonl");
    std::fs::copy(&s.session, &second).unwrap();
    crate::common::age(&second, 3600);
    // One file, then a folder of two (the bulk report and its table).
    let one = out(s.cmd().args(["redact", "--dry-run"]).arg(&s.session));
    assert_code(&one, 0);
    let (so, se) = (stdout(&one), stderr(&one));
    assert!(
        so.contains("would change") && so.contains("redact"),
        "stdout: {so}"
    );
    assert!(!se.contains("would change"), "stderr: {se}");
    assert!(se.contains("dry run, nothing written"), "stderr: {se}");
    let project = s.session.parent().unwrap();
    let many = out(s
        .cmd()
        .args(["run", "-p", "scrub", "--dry-run"])
        .arg(project));
    assert_code(&many, 0);
    let (so, se) = (stdout(&many), stderr(&many));
    assert!(so.contains("2 of 2 files would change"), "stdout: {so}");
    assert!(!se.contains("would change"), "stderr: {se}");
    // `-q` as rg means it: no report at all.
    let quiet = out(s.cmd().args(["redact", "-q", "--dry-run"]).arg(&s.session));
    assert_code(&quiet, 0);
    assert!(quiet.stdout.is_empty(), "{}", stdout(&quiet));
    // The secret is never in the report.
    assert!(!stdout(&one).contains(&token()) && !stdout(&many).contains(&token()));
}
