//! The two helpers every integration-test binary shares: running the `cchist` binary, and
//! finding corpus files.
//!
//! The corpus lives in the repository (`tests/corpus/`, see its README): sessions the real
//! Claude Code CLI wrote for `tests/corpus/scenarios/*.json`, and MIT-licensed public
//! transcripts. A checkout of `shared/` beside the repository adds an extended corpus
//! (`../shared/corpus`, same layout); tests that iterate the corpus also run over it when it is
//! there and say so when it is not. No test needs it.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The `cchist` binary Cargo built for this test run.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cchist"))
}

/// A command running the `cchist` binary, stdin closed (a test never waits on a terminal);
/// add arguments, environment or another stdin as needed.
pub fn cchist() -> Command {
    let mut c = Command::new(bin());
    c.stdin(Stdio::null());
    c
}

/// Runs `cchist args` and returns its output, whatever the exit status.
pub fn run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    cchist().args(args).output().expect("run cchist")
}

/// Runs `cmd`, asserts it exits 0 (else panics with its arguments and stderr) and returns its
/// output.
pub fn ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run cchist");
    assert!(
        out.status.success(),
        "cchist {:?} failed ({}): {}",
        cmd.get_args().collect::<Vec<_>>(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `cchist args`, asserts it exits 0 and returns stdout.
pub fn stdout_ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Vec<u8> {
    ok(cchist().args(args)).stdout
}

/// Writes one line to the real stderr, past libtest's capture, so a skip shows in every run.
pub fn note(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "note: {msg}");
}

/// Whether this run is under CI (`CI` is `true` or `1`), where a test must not pass by
/// skipping.
pub fn under_ci() -> bool {
    matches!(std::env::var("CI").as_deref(), Ok("true") | Ok("1"))
}

/// A test that cannot run here (a tool, a privilege or a binary is missing) calls this before
/// returning: under CI ([`under_ci`]) it panics with `why`, so the suite cannot pass vacuously;
/// elsewhere it says on stderr that the test skipped.
#[track_caller]
pub fn skip_or_fail(why: &str) {
    if under_ci() {
        panic!("CI is set, so this test may not skip: {why}");
    }
    note(&format!(
        "SKIPPED {}: {why}",
        std::thread::current().name().unwrap_or("test")
    ));
}

/// A test that needs the extended corpus (`../shared/corpus`) when it is absent: a fresh
/// clone has no `../shared`, so the suite must pass without it. The skip is said on stderr,
/// and it fails only where the corpus is promised (`CCHIST_SHARED_REQUIRED=1`, which
/// `.ci/run` sets when `../shared/corpus` is beside the clone).
pub fn skip_without_shared(why: &str) {
    if std::env::var("CCHIST_SHARED_REQUIRED").is_ok_and(|v| v == "1") {
        panic!("CCHIST_SHARED_REQUIRED=1, so this test may not skip: {why}");
    }
    note(&format!(
        "SKIPPED {}: {why}",
        std::thread::current().name().unwrap_or("test")
    ));
}

/// The repository root.
pub fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The in-repository corpus, `tests/corpus`.
pub fn corpus_dir() -> PathBuf {
    manifest().join("tests/corpus")
}

/// The extended corpus `../shared/corpus`, when checked out beside the repository. Says once
/// on stderr when it is absent.
pub fn extended_dir() -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = manifest().join("../shared/corpus");
        if d.is_dir() {
            Some(d)
        } else {
            note(&format!(
                "no extended corpus at {}: corpus-wide tests run over tests/corpus only",
                d.display()
            ));
            None
        }
    })
    .clone()
}

/// `tests/corpus/<rel>`; panics if the repository lacks it.
pub fn corpus(rel: &str) -> PathBuf {
    let p = corpus_dir().join(rel);
    assert!(p.is_file(), "corpus file missing: {}", p.display());
    p
}

/// `<rel>` from the in-repository corpus, else from the extended one; `None` (said on stderr)
/// when only the extended corpus would hold it and it is absent.
pub fn corpus_any(rel: &str) -> Option<PathBuf> {
    let p = corpus_dir().join(rel);
    if p.is_file() {
        return Some(p);
    }
    match extended_dir().map(|d| d.join(rel)) {
        Some(p) if p.is_file() => Some(p),
        Some(p) => panic!("corpus file missing in both corpora: {}", p.display()),
        None => {
            note(&format!(
                "skipping {rel}: only in the extended corpus, which is absent"
            ));
            None
        }
    }
}

/// The scenario `tests/corpus/scenarios/<name>.json` that made `generated/<name>.jsonl`.
pub fn scenario(name: &str) -> PathBuf {
    corpus(&format!("scenarios/{name}.json"))
}

/// Every `*.jsonl` file under `sub` (e.g. `"real"`, `"generated"`, `""` for all) of the
/// in-repository corpus, then those of the extended corpus whose relative path the repository
/// does not hold; sorted within each corpus.
pub fn corpus_files(sub: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut own = BTreeSet::new();
    let here = corpus_dir();
    for p in jsonl_under(&here.join(sub)) {
        own.insert(p.strip_prefix(&here).expect("under corpus").to_path_buf());
        files.push(p);
    }
    if let Some(ext) = extended_dir() {
        for p in jsonl_under(&ext.join(sub)) {
            if !own.contains(p.strip_prefix(&ext).expect("under corpus")) {
                files.push(p);
            }
        }
    }
    files
}

/// The `*.jsonl` files directly under `sub` (`"real"` or `"generated"`) of both corpora, not
/// those in companion folders; sorted within each corpus.
pub fn flat_files(sub: &str) -> Vec<PathBuf> {
    corpus_files(sub)
        .into_iter()
        .filter(|p| p.parent().and_then(Path::file_name) == Some(std::ffi::OsStr::new(sub)))
        .collect()
}

/// Main-session transcripts of both corpora: [`flat_files`] without sub-agent files
/// (`agent-*`).
pub fn main_sessions(sub: &str) -> Vec<PathBuf> {
    flat_files(sub)
        .into_iter()
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains("agent-"))
        })
        .collect()
}

/// The number of `*.jsonl` files under `sub` of the in-repository corpus: a lower bound for
/// [`corpus_files`], so a test cannot pass on an empty walk.
pub fn own_corpus_len(sub: &str) -> usize {
    jsonl_under(&corpus_dir().join(sub)).len()
}

/// `*.jsonl` files under `dir`, recursively, sorted; empty when `dir` does not exist.
pub fn jsonl_under(dir: &Path) -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(d) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, &mut v);
    v.sort();
    v
}

/// Recursively copies `src` into `dst`.
pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).expect("create dir copy");
    for entry in std::fs::read_dir(src).expect("read dir to copy") {
        let entry = entry.expect("dir entry");
        let to = dst.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).expect("copy file");
        }
    }
}

/// Sets the modification time of the file `p` to `t`.
pub fn set_mtime(p: &Path, t: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(p)
        .expect("open to set mtime")
        .set_modified(t)
        .expect("set mtime");
}

/// Sets the modification time of the file `p` to `secs` seconds ago (so it does not look like a
/// live session).
pub fn age(p: &Path, secs: u64) {
    set_mtime(
        p,
        std::time::SystemTime::now() - std::time::Duration::from_secs(secs),
    );
}

/// The session parsed from the JSONL bytes `data`.
pub fn session_of(data: &[u8]) -> cchist::transcript::session::Session<'_> {
    cchist::transcript::session::Session::new(
        cchist::io::framing::lines(data, 1)
            .map(cchist::transcript::record::Record::from_line)
            .collect(),
    )
}

/// The bytes of `s`'s records, written out in order.
pub fn session_bytes(s: &cchist::transcript::session::Session) -> Vec<u8> {
    let mut out = Vec::new();
    for r in &s.records {
        r.write_to(&mut out);
    }
    out
}

/// The uuids of each step's records, in order (steps as `history list --steps` numbers them).
pub fn step_uuids(data: &[u8]) -> Vec<Vec<String>> {
    let s = session_of(data);
    let turns = s.turns();
    s.steps(&turns)
        .iter()
        .map(|st| {
            st.records
                .iter()
                .filter_map(|&i| s.header(i).and_then(|h| h.uuid().map(str::to_string)))
                .collect()
        })
        .collect()
}

/// Asserts `out` exited with `code`; the message shows its stdout and stderr.
pub fn assert_code(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A new temp folder holding the file `name` with `content`: the folder (removed when dropped)
/// and the file's path.
pub fn temp_file(name: &str, content: impl AsRef<[u8]>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join(name);
    std::fs::write(&p, content).expect("write temp file");
    (dir, p)
}

/// `p` run over `data` in memory: as one buffer (`run_buffer`), or read as a stream
/// (`run_stream`) when `stream`. The output bytes.
pub fn run_in_memory(p: &cchist::engine::pipeline::Pipeline, data: &[u8], stream: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut sink = cchist::io::output::SpanWriter::new(&mut out);
    let origin = cchist::error::Origin::stdin();
    if stream {
        p.run_stream(data, &origin, &mut sink).unwrap();
    } else {
        p.run_buffer(data, &origin, &mut sink).unwrap();
    }
    cchist::io::output::Sink::finish(&mut sink).unwrap();
    drop(sink);
    out
}

/// Copies the generated corpus session `name` and its companion folder under the config root
/// `root`, where Claude Code keeps them (`projects/<folder of its cwd>/`); returns the copy's
/// path.
pub fn install_generated(root: &Path, name: &str) -> PathBuf {
    let src = corpus_dir().join("generated").join(format!("{name}.jsonl"));
    let cwd = cchist::claude::layout::first_cwd(&src).unwrap();
    let dir = root
        .join("projects")
        .join(cchist::claude::layout::project_folder_name(&cwd));
    std::fs::create_dir_all(&dir).unwrap();
    let dst = dir.join(format!("{name}.jsonl"));
    std::fs::copy(&src, &dst).unwrap();
    let comp = corpus_dir().join("generated").join(name);
    if comp.is_dir() {
        copy_dir(&comp, &dir.join(name));
    }
    dst
}

/// The record of the transcript `data` that carries `cchistSummary` (what `summarize-range`
/// writes); every line must be JSON.
pub fn summary_record(data: &[u8]) -> Option<serde_json::Value> {
    data.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice::<serde_json::Value>(l).expect("a JSON line"))
        .find(|r| r.get("cchistSummary").is_some())
}

/// The whole number `field` of each object in the JSON array `v`.
pub fn u64s(v: &serde_json::Value, field: &str) -> Vec<u64> {
    v.as_array()
        .expect("a JSON array")
        .iter()
        .map(|o| o[field].as_u64().expect("a whole number"))
        .collect()
}

/// A `summarize-range --command` that reads its input and prints `reply` (kept in
/// `dir/reply.json`).
pub fn reply_command(dir: &Path, reply: &str) -> String {
    let p = dir.join("reply.json");
    std::fs::write(&p, reply).expect("write reply");
    format!("cat >/dev/null; cat {}", p.display())
}

/// The strings of the JSON array `v`.
pub fn strs(v: &serde_json::Value) -> Vec<&str> {
    v.as_array()
        .expect("a JSON array")
        .iter()
        .map(|s| s.as_str().expect("a string"))
        .collect()
}

/// One user or assistant record of session `session`, as Claude Code writes them (the
/// assistant's text as a content block), with a fixed timestamp; a JSON line with its newline.
pub fn message_line(
    kind: &str,
    uuid: &str,
    parent: Option<&str>,
    session: &str,
    text: &str,
) -> String {
    message_value(kind, uuid, parent, session, text).to_string() + "\n"
}

/// The value of [`message_line`], for a test that adds fields.
pub fn message_value(
    kind: &str,
    uuid: &str,
    parent: Option<&str>,
    session: &str,
    text: &str,
) -> serde_json::Value {
    serde_json::json!({
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": session,
        "timestamp": "2026-04-01T10:00:00.000Z",
        "message": if kind == "user" {
            serde_json::json!({"role": "user", "content": text})
        } else {
            serde_json::json!({"role": "assistant", "id": format!("msg_{uuid}"), "type": "message",
                "model": "claude-opus-5-5", "content": [{"type": "text", "text": text}]})
        },
    })
}

/// `cchist check --json FILE`, which must find something (exit 1): the line of each finding.
pub fn check_finding_lines(file: &Path) -> Vec<u64> {
    let check = cchist()
        .args(["check", "--json"])
        .arg(file)
        .output()
        .expect("run cchist");
    assert_eq!(
        check.status.code(),
        Some(1),
        "check finds something in {}",
        file.display()
    );
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).expect("a JSON report");
    report["files"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["line"].as_u64().expect("a line"))
        .collect()
}

/// Run `cmd` with `input` on its standard input; its output, stdout and stderr captured.
pub fn output_with_stdin(cmd: &mut Command, input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

/// Every file and folder under `dir` (a folder after what it holds), links not followed,
/// sorted.
pub fn entries_under(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            v.extend(entries_under(&p));
        }
        v.push(p);
    }
    v.sort();
    v
}
