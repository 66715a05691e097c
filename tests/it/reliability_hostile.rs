//! Hostile input (issue 9) through `run` (stdout, stdin, `--in-place`, `--dry-run`), `validate`
//! and the library. Each case ends in a clear error or a documented pass-through; never a
//! panic, a signal, a partial file or a left temp file; exit 0 ok, 1 findings, 2 error.
//!
//! Pass-through policy (`on_invalid_json = "keep"`, the default): a line that is not valid JSON
//! — invalid, truncated, NUL-padded, invalid UTF-8, BOM-prefixed — and a line that is JSON but
//! not an object are written back byte for byte, in place, and no stage sees them. A record
//! nested deeper than `record::MAX_VALUE_DEPTH` passes the identity and `validate`, but a stage
//! that must edit it stops with `file:line: … nested N levels deep` and exit 2, the file
//! untouched.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::reliability_common::*;
use cchist::engine::pipeline::Pipeline;
use cchist::error::Origin;

/// Run `cmd` with a deadline (a parent cycle must not hang a stage); stdin from `input`.
fn run_timed(mut cmd: Command, input: Option<&[u8]>, secs: u64) -> Output {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let writer = input.map(|data| {
        let mut stdin = child.stdin.take().unwrap();
        let data = data.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&data);
        })
    });
    let pid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(secs) {
                if done.load(std::sync::atomic::Ordering::Relaxed) {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // SAFETY: plain kill of our own child.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            true
        })
    };
    let out = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(
        !watchdog.join().unwrap(),
        "cchist hung for {secs}s: {cmd:?}"
    );
    if let Some(w) = writer {
        w.join().unwrap();
    }
    out
}

/// `run -p PIPELINE --in-place --force FILE`, killed after 120 s.
fn in_place_timed(pipeline: &Path, file: &Path) -> Output {
    run_timed(
        cmd(
            &[
                "run",
                "-p",
                pipeline.to_str().unwrap(),
                "--in-place",
                "--force",
            ],
            &[file],
        ),
        None,
        120,
    )
}

fn cmd(args: &[&str], paths: &[&Path]) -> Command {
    let mut c = Command::new(bin());
    c.args(args);
    for p in paths {
        c.arg(p);
    }
    c
}

fn identity() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("filters/identity.toml")
}

/// One hostile line (or file body) and what `validate` must say about it.
struct Case {
    name: &'static str,
    body: Vec<u8>,
    /// `validate` exit code on the body alone.
    validate: i32,
    /// A finding rule `validate` must report, if any.
    rule: Option<&'static str>,
    /// The body is not a JSON object, so every mode passes it through byte for byte.
    pass_through: bool,
}

fn deep(n: usize) -> String {
    format!("{}{}", "[".repeat(n), "]".repeat(n))
}

fn cases() -> Vec<Case> {
    let ok = |name, body: &[u8]| Case {
        name,
        body: body.to_vec(),
        validate: 0,
        rule: None,
        pass_through: false,
    };
    let bad = |name, body: &[u8], rule| Case {
        name,
        body: body.to_vec(),
        validate: 1,
        rule: Some(rule),
        pass_through: true,
    };
    let chain = "{\"type\":\"user\",\"uuid\":\"c1\",\"parentUuid\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\r\n{\"type\":\"assistant\",\"uuid\":\"c2\",\"parentUuid\":\"c1\",\"message\":{\"id\":\"m\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"yo\"}]}}\r\n";
    vec![
        ok("empty", b""),
        bad("invalid-json", b"{\"type\":\"user\",, oops}\n", "invalid-json"),
        bad(
            "truncated-tail",
            b"{\"type\":\"user\",\"uuid\":\"t1\",\"message\":{\"content\":\"cut here",
            "truncated-last-line",
        ),
        bad("nul", b"\0\0\0\0\0\0\0\0{\"type\":\"user\"}\n", "invalid-json"),
        // Invalid UTF-8 inside a string passes validation (serde skips ignored strings unread,
        // and Claude Code's decoder would read U+FFFD); outside a string it is invalid JSON.
        ok("invalid-utf8-in-string", b"{\"type\":\"user\",\"uuid\":\"v1\",\"x\":\"\xff\xfe\xc3\"}\n"),
        bad("invalid-utf8-outside", b"{\"type\":\"user\"}\xff\n", "invalid-json"),
        bad("bom", b"\xef\xbb\xbf{\"type\":\"user\",\"uuid\":\"b1\"}\n", "invalid-json"),
        ok("crlf", chain.as_bytes()),
        Case {
            name: "deep-object-100000",
            body: format!("{{\"type\":\"user\",\"uuid\":\"d1\",\"x\":{}}}\n", deep(100_000)).into_bytes(),
            validate: 0,
            rule: None,
            pass_through: false,
        },
        bad("deep-array-100000", format!("{}\n", deep(100_000)).as_bytes(), "not-an-object"),
        bad(
            "unterminated-deep",
            "[".repeat(100_000).as_bytes(),
            "truncated-last-line",
        ),
        Case {
            name: "duplicate-uuids",
            body: b"{\"type\":\"user\",\"uuid\":\"u1\",\"parentUuid\":null}\n{\"type\":\"user\",\"uuid\":\"u1\",\"parentUuid\":null}\n".to_vec(),
            validate: 1,
            rule: Some("duplicate-uuid"),
            pass_through: false,
        },
        Case {
            name: "parent-cycle",
            body: b"{\"type\":\"user\",\"uuid\":\"a\",\"parentUuid\":\"c\"}\n{\"type\":\"assistant\",\"uuid\":\"b\",\"parentUuid\":\"a\"}\n{\"type\":\"user\",\"uuid\":\"c\",\"parentUuid\":\"b\"}\n{\"type\":\"user\",\"uuid\":\"self\",\"parentUuid\":\"self\"}\n".to_vec(),
            validate: 1,
            rule: Some("parent-cycle"),
            pass_through: false,
        },
        bad("json-array", b"[{\"type\":\"user\"}]\n", "not-an-object"),
        bad("json-string", b"\"{\\\"type\\\":\\\"user\\\"}\"\n", "not-an-object"),
        bad("json-number", b"1e999999\n", "not-an-object"),
        ok(
            "u-escaped",
            format!(
                "{{\"type\":\"user\",\"uuid\":\"e1\",\"parentUuid\":null,\"message\":{{\"role\":\"user\",\"content\":\"key \\u0041\\u004b\\u0049\\u0041{} \\ud83d\\ude00 \\u0000\"}}}}\n",
                &SECRET[4..]
            )
            .as_bytes(),
        ),
        // JSON.stringify writes a cut surrogate pair as a lone `\ud83d`; JSON.parse reads it.
        ok("lone-surrogate", b"{\"type\":\"user\",\"uuid\":\"s1\",\"x\":\"\\ud83d\"}\n"),
        Case {
            // A long tool output (a stage caps it, so it must be edited) holding a lone
            // surrogate escape: serde_json refuses those when building a value.
            name: "lone-surrogate-edited",
            body: format!(
                "{{\"type\":\"assistant\",\"uuid\":\"ls1\",\"parentUuid\":null,\"message\":{{\"id\":\"m1\",\"role\":\"assistant\",\"content\":[{{\"type\":\"tool_use\",\"id\":\"toolu_ls\",\"name\":\"Bash\",\"input\":{{\"command\":\"ls\"}}}}]}}}}\n{{\"type\":\"user\",\"uuid\":\"ls2\",\"parentUuid\":\"ls1\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_ls\",\"content\":\"\\ud83d {}\"}}]}}}}\n",
                "x".repeat(200_000)
            )
            .into_bytes(),
            validate: 0,
            rule: None,
            pass_through: false,
        },
        bad("glued-records", b"{\"type\":\"user\"}{\"type\":\"user\"}\n", "invalid-json"),
        ok("blank-line-only", b"\n"),
    ]
    .into_iter()
    .map(|mut c| {
        // "blank-line-only" is an empty line: invalid JSON, kept.
        if c.name == "blank-line-only" {
            c.validate = 1;
            c.rule = Some("invalid-json");
            c.pass_through = true;
        }
        c
    })
    .collect()
}

/// Library: the identity is lossless, validation and header parsing never panic.
#[test]
fn hostile_cases_through_the_library() {
    for c in cases() {
        let out = crate::common::run_in_memory(&Pipeline::identity(), &c.body, false);
        assert!(out == c.body, "{}: identity changed bytes", c.name);
        let findings = cchist::findings::validate::validate(&c.body);
        if let Some(rule) = c.rule {
            assert!(
                findings.iter().any(|f| f.rule == rule),
                "{}: expected {rule}, got {findings:?}",
                c.name
            );
        }
        if c.validate == 0 {
            assert!(findings.is_empty(), "{}: {findings:?}", c.name);
        }
        for l in cchist::io::framing::lines(&c.body, 1) {
            let _ = cchist::transcript::record::Header::parse(l.body);
            let mut r = cchist::transcript::record::Record::from_line(l);
            let _ = r.value();
            let _ = cchist::transcript::record::check_json(l.body);
        }
        // The streaming path too, one byte at a time at the worst.
        let mut streamed = Vec::new();
        cchist::io::input::stream_chunks(OneByte(&c.body), &Origin::stdin(), |b, _| {
            streamed.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        assert!(streamed == c.body, "{}: stream changed bytes", c.name);
    }
}

struct OneByte<'a>(&'a [u8]);
impl std::io::Read for OneByte<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.0.is_empty() || out.is_empty() {
            return Ok(0);
        }
        out[0] = self.0[0];
        self.0 = &self.0[1..];
        Ok(1)
    }
}

/// The binary: identity via file and stdin, validate, dry-run, and an in-place run of a
/// changing pipeline over a real session with the hostile line in its middle.
#[test]
fn hostile_cases_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let (changing, stage) = changing_pipeline();
    let strict = dir.path().join("strict.toml");
    std::fs::write(
        &strict,
        format!("version = 1\non_invalid_json = \"error\"\n\n[[stage]]\ntype = \"{stage}\"\n"),
    )
    .unwrap();
    let base = session(3, 30_000);
    let mut table = Vec::new();
    for c in cases() {
        let f = dir.path().join(format!("{}.jsonl", c.name));
        std::fs::write(&f, &c.body).unwrap();
        // identity, file and stdin
        let o = run_timed(
            cmd(&["run", "-p", identity().to_str().unwrap()], &[&f]),
            None,
            60,
        );
        assert_eq!(
            code(&o),
            0,
            "{}: {}",
            c.name,
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.stdout == c.body, "{}: identity (file)", c.name);
        let o = run_timed(
            cmd(&["run", "-p", identity().to_str().unwrap()], &[]),
            Some(&c.body),
            60,
        );
        assert_eq!(code(&o), 0, "{}", c.name);
        assert!(o.stdout == c.body, "{}: identity (stdin)", c.name);
        // validate, text and JSON
        let o = run_timed(cmd(&["validate"], &[&f]), None, 60);
        assert_eq!(
            code(&o),
            c.validate,
            "{}: validate: {}",
            c.name,
            String::from_utf8_lossy(&o.stdout)
        );
        if let Some(rule) = c.rule {
            assert!(
                String::from_utf8_lossy(&o.stdout).contains(rule),
                "{}",
                c.name
            );
        }
        let o = run_timed(cmd(&["validate", "--format", "json"], &[&f]), None, 60);
        assert_eq!(code(&o), c.validate, "{}", c.name);
        serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("validate --format json");
        // dry run with the changing pipeline
        let o = run_timed(
            cmd(
                &[
                    "run",
                    "-p",
                    changing.to_str().unwrap(),
                    "--dry-run",
                    "--json",
                ],
                &[&f],
            ),
            None,
            60,
        );
        let dry = code(&o);
        assert!(dry == 0 || dry == 2, "{}: dry run exit {dry}", c.name);
        // in place: the hostile line in the middle of a real session
        let mut mixed = base.clone();
        if !mixed.ends_with(b"\n") {
            mixed.push(b'\n');
        }
        mixed.extend_from_slice(&c.body);
        if !c.body.is_empty() && !c.body.ends_with(b"\n") {
            // An unterminated line can only be last: keep it last.
        } else {
            mixed.extend_from_slice(&session(4, 10_000));
        }
        let m = dir.path().join(format!("{}-mixed.jsonl", c.name));
        std::fs::write(&m, &mixed).unwrap();
        let o = in_place_timed(changing, &m);
        let now = std::fs::read(&m).unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        let outcome = match code(&o) {
            0 => {
                assert!(now != mixed, "{}: the session part should change", c.name);
                if c.pass_through && !c.body.is_empty() {
                    assert!(
                        memchr::memmem::find(&now, &c.body).is_some(),
                        "{}: the invalid line was not passed through byte for byte",
                        c.name
                    );
                    "changed; hostile line kept byte for byte"
                } else {
                    "changed"
                }
            }
            2 => {
                assert!(
                    now == mixed,
                    "{}: a failed run must not touch the file",
                    c.name
                );
                assert!(
                    err.contains(m.to_str().unwrap()),
                    "{}: error must name the file: {err}",
                    c.name
                );
                "exit 2, file untouched"
            }
            x => panic!("{}: in-place exit {x}: {err}", c.name),
        };
        assert!(
            temp_files(dir.path()).is_empty(),
            "{}: temp file left",
            c.name
        );
        // on_invalid_json = "error": stop before writing anything, naming file and line
        std::fs::write(&m, &mixed).unwrap();
        let o = in_place_timed(&strict, &m);
        if c.pass_through
            && !matches!(
                c.name,
                "deep-array-100000" | "json-array" | "json-string" | "json-number"
            )
        {
            assert_eq!(code(&o), 2, "{}", c.name);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains(&format!("{}:", m.display())),
                "{}: {err}",
                c.name
            );
            assert!(std::fs::read(&m).unwrap() == mixed, "{}", c.name);
        }
        table.push(format!(
            "{:<22} validate {} | in-place: {outcome}",
            c.name, c.validate
        ));
    }
    eprintln!("{}", table.join("\n"));
}

/// A 100 MB single line (normal suite) through stdin, file, validate and in place.
#[test]
#[ignore = "slow: a 100 MB line"]
fn slow_long_line_100mb() {
    long_line(100 << 20);
}

/// A 1 GB single line.
#[test]
#[ignore = "long: 1 GB line"]
fn long_line_1gb() {
    long_line(1 << 30);
}

fn long_line(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("long.jsonl");
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&f).unwrap());
        w.write_all(b"{\"type\":\"user\",\"uuid\":\"l1\",\"parentUuid\":null,\"message\":{\"role\":\"user\",\"content\":\"")
            .unwrap();
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..n >> 20 {
            w.write_all(&chunk).unwrap();
        }
        w.write_all(b"\"}}\n{\"type\":\"progress\",\"uuid\":\"p1\",\"parentUuid\":\"l1\",\"data\":{\"type\":\"bash_progress\"}}\n")
            .unwrap();
    }
    let len = std::fs::metadata(&f).unwrap().len();
    let t0 = Instant::now();
    // identity to stdout, from the file and from a pipe (the streaming reader)
    let id = identity();
    let o = run_pipeline(&id, &[], &f);
    assert_eq!(code(&o), 0);
    assert_eq!(o.stdout.len() as u64, len);
    let o = Command::new(bin())
        .args(["run", "-p"])
        .arg(&id)
        .stdin(std::fs::File::open(&f).unwrap())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0);
    assert_eq!(o.stdout.len() as u64, len);
    let piped = format!(
        "cat '{}' | '{}' run -p '{}' | wc -c",
        f.display(),
        bin(),
        id.display()
    );
    let o = Command::new("bash")
        .args(["-o", "pipefail", "-c", &piped])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), len.to_string());
    let o = Command::new(bin())
        .arg("validate")
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stdout));
    let o = run_pipeline(&changing_pipeline().0, &["--in-place", "--force"], &f);
    let c = code(&o);
    assert!(c == 0 || c == 2, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(temp_files(dir.path()).is_empty());
    eprintln!(
        "{} MB line: identity file+stdin+pipe, validate, in-place (exit {c}) in {:?}",
        n >> 20,
        t0.elapsed()
    );
}

/// A link inside a projects tree that points outside it is not followed by a walk, and
/// `--in-place` refuses a link given by name.
#[test]
fn symlink_pointing_outside_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let victim = session(9, 20_000);
    let secret_file = write_under(dir.path(), "outside/victim.jsonl", &victim);
    let outside = secret_file.parent().unwrap().to_path_buf();
    let proj = dir.path().join("projects/p");
    std::fs::create_dir_all(&proj).unwrap();
    std::os::unix::fs::symlink(&secret_file, proj.join("link.jsonl")).unwrap();
    std::os::unix::fs::symlink(&outside, proj.join("linkdir")).unwrap();
    let own = proj.join("own.jsonl");
    std::fs::write(&own, session(10, 20_000)).unwrap();
    let p = changing_pipeline().0.clone();
    let o = run_pipeline(&p, &["--in-place", "--force"], &dir.path().join("projects"));
    let err = String::from_utf8_lossy(&o.stderr);
    // The rest is processed, but the run passed over the links: incomplete, exit 2.
    assert_eq!(code(&o), 2, "{err}");
    assert!(err.contains("incomplete"), "{err}");
    assert!(
        err.contains("link.jsonl") && err.contains("not followed"),
        "{err}"
    );
    assert!(err.contains("linkdir"), "{err}");
    assert!(
        std::fs::read(&secret_file).unwrap() == victim,
        "the link target was changed"
    );
    assert!(std::fs::read(&own).unwrap() != session(10, 20_000));
    // validate walks the same way
    let o = Command::new(bin())
        .arg("validate")
        .arg(dir.path().join("projects"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("not followed"));
    // --in-place on the link by name: refused, target untouched
    let o = run_pipeline(&p, &["--in-place", "--force"], &proj.join("link.jsonl"));
    assert_eq!(code(&o), 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("symbolic link"));
    assert!(std::fs::read(&secret_file).unwrap() == victim);
    assert!(std::fs::symlink_metadata(proj.join("link.jsonl"))
        .unwrap()
        .file_type()
        .is_symlink());
    // A link planted at the backup's name is never written through, nor replaced: a suffix
    // backup never goes over anything already there, so the file fails and stays as it was.
    let target = outside.join("not-a-backup");
    std::fs::write(&target, b"keep me").unwrap();
    std::fs::write(&own, session(10, 20_000)).unwrap();
    let mut bak = own.as_os_str().to_owned();
    bak.push(".bak");
    std::os::unix::fs::symlink(&target, PathBuf::from(&bak)).unwrap();
    let o = run_pipeline(&p, &["--in-place", "--force", "--backup=.bak"], &own);
    assert_eq!(code(&o), 2, "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read(&target).unwrap(),
        b"keep me",
        "backup written through a link"
    );
    assert!(std::fs::symlink_metadata(PathBuf::from(&bak))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read(&own).unwrap() == session(10, 20_000));
}

/// Non-regular files given by name: a FIFO and a directory are refused in place.
#[test]
fn in_place_refuses_non_regular_files() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: plain mkfifo on a fresh path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let p = changing_pipeline().0.clone();
    let o = run_timed(
        cmd(
            &["run", "-p", p.to_str().unwrap(), "--in-place", "--force"],
            &[&fifo],
        ),
        None,
        30,
    );
    assert_eq!(code(&o), 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a regular file"));
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    // A folder walk passes over the FIFO and processes the transcript beside it (a folder
    // holding no transcript at all is an error since issue 17: nothing to do is not success).
    let beside = dir.path().join("beside.jsonl");
    std::fs::write(&beside, "{\"type\":\"user\",\"uuid\":\"u1\",\"parentUuid\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n").unwrap();
    let o = run_timed(
        cmd(
            &["run", "-p", p.to_str().unwrap(), "--in-place", "--force"],
            &[dir.path()],
        ),
        None,
        30,
    );
    assert_eq!(
        code(&o),
        0,
        "a walk passes over the FIFO: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Unreadable files and folders: an error naming the file (exit 2), the others processed. Root
/// reads through chmod 000, so this runs cchist as `nobody` with setpriv; without setpriv it
/// is skipped with a message.
#[test]
fn unreadable_files_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("projects/p");
    std::fs::create_dir_all(proj.join("locked")).unwrap();
    let good = proj.join("good.jsonl");
    let bad = proj.join("bad.jsonl");
    std::fs::write(&good, session(11, 20_000)).unwrap();
    std::fs::write(&bad, session(12, 20_000)).unwrap();
    std::fs::write(proj.join("locked/inner.jsonl"), session(13, 1000)).unwrap();
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::set_permissions(proj.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let mut as_user: Vec<String> = Vec::new();
    if is_root() {
        let setpriv = Command::new("setpriv").arg("--version").output();
        if setpriv.is_err() {
            crate::common::skip_or_fail(
                "running as root and setpriv is missing; chmod 000 does not stop root",
            );
            return;
        }
        // nobody must reach the files: open the folders, give the readable file to nobody.
        for d in [dir.path(), &dir.path().join("projects"), &proj] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::os::unix::fs::chown(&good, Some(65534), Some(65534)).unwrap();
        // nobody writes its temp files in the folder, as a user does in their own.
        std::os::unix::fs::chown(&proj, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&good, std::fs::Permissions::from_mode(0o600)).unwrap();
        let pipeline = dir.path().join("p.toml");
        std::fs::copy(&changing_pipeline().0, &pipeline).unwrap();
        std::fs::set_permissions(&pipeline, std::fs::Permissions::from_mode(0o644)).unwrap();
        as_user = [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]
        .map(String::from)
        .to_vec();
        as_user.push(bin());
        as_user.extend(["run", "-p"].map(String::from));
        as_user.push(pipeline.display().to_string());
    }
    let run_cmd = |extra: &[&str]| {
        let mut c = if as_user.is_empty() {
            let mut c = Command::new(bin());
            c.args(["run", "-p"]).arg(&changing_pipeline().0);
            c
        } else {
            let mut c = Command::new(&as_user[0]);
            c.args(&as_user[1..]);
            c
        };
        c.args(extra);
        c.output().unwrap()
    };
    let good_before = std::fs::read(&good).unwrap();
    let o = run_cmd(&["--in-place", "--force", "--yes", proj.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 2, "{err}");
    assert!(
        err.contains("bad.jsonl") && err.contains("ermission denied"),
        "{err}"
    );
    assert!(
        err.contains("locked"),
        "the unreadable folder is reported: {err}"
    );
    assert!(
        std::fs::read(&good).unwrap() != good_before,
        "the readable file is still processed: {err}"
    );
    assert!(temp_files(dir.path()).is_empty());
    // validate: exit 2 for the unreadable file
    let mut v = if as_user.is_empty() {
        Command::new(bin())
    } else {
        let mut c = Command::new(&as_user[0]);
        c.args(&as_user[1..4]).arg(bin());
        c
    };
    let o = v.arg("validate").arg(&bad).output().unwrap();
    assert_eq!(code(&o), 2);
    std::fs::set_permissions(proj.join("locked"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A full disk, two ways: `ulimit -f` (EFBIG; cchist ignores SIGXFSZ so it gets the error
/// instead of dying) and a tiny tmpfs (ENOSPC). The original stays intact, no temp file is
/// left, exit 2 with a message.
#[test]
fn full_disk_leaves_the_original_intact() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.jsonl");
    let orig = session(14, 3 << 20);
    std::fs::write(&f, &orig).unwrap();
    let p = changing_pipeline().0.clone();
    // ulimit -f counts 1024-byte blocks in bash: allow 1 MB, the output needs about 3.
    for extra in [&[][..], &["--backup=.bak"][..]] {
        let script = format!(
            "ulimit -f 1024; exec '{}' run -p '{}' --in-place --force {} '{}'",
            bin(),
            p.display(),
            extra.join(" "),
            f.display()
        );
        let o = Command::new("bash").args(["-c", &script]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(code(&o), 2, "{err}");
        assert!(
            err.contains("too large") || err.contains("File too large"),
            "{err}"
        );
        assert!(std::fs::read(&f).unwrap() == orig);
        assert!(
            temp_files(dir.path()).is_empty(),
            "{:?}",
            temp_files(dir.path())
        );
    }
    // stdout to a file past the limit: an error, not a signal
    let script = format!(
        "ulimit -f 1024; exec '{}' run -p '{}' '{}' > '{}'",
        bin(),
        p.display(),
        f.display(),
        dir.path().join("out").display()
    );
    let o = Command::new("bash").args(["-c", &script]).output().unwrap();
    assert_eq!(code(&o), 2, "{}", String::from_utf8_lossy(&o.stderr));

    // ENOSPC on a 1 MB tmpfs (needs mount: root in a container that allows it).
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .output()
        .is_ok_and(|o| o.status.success());
    if !mounted {
        crate::common::skip_or_fail("ENOSPC sub-case: cannot mount a tmpfs here");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mnt.clone());
    let g = mnt.join("s.jsonl");
    let small = session(15, 300_000);
    std::fs::write(&g, &small).unwrap();
    // Fill the disk, then free 8 KB: far less than the output needs.
    let filler = mnt.join("filler");
    {
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = [0u8; 4096];
        while f.write_all(&block).is_ok() {}
        let len = f.metadata().unwrap().len();
        f.set_len(len.saturating_sub(8192)).unwrap();
    }
    let o = run_pipeline(&p, &["--in-place", "--force", "--backup=.bak"], &g);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let (c, now, temps) = (code(&o), std::fs::read(&g).unwrap(), temp_files(&mnt));
    assert_eq!(c, 2, "{err}");
    assert!(err.contains("No space left"), "{err}");
    assert!(now == small);
    assert!(!mnt.join("s.jsonl.bak").exists());
    assert!(temps.is_empty(), "{temps:?}");
}
