//! Helpers shared by the reliability tests (issue 9): synthetic sessions with planted content,
//! a pipeline that changes every file, a small deterministic random source, and running the
//! binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The binary under test (`CCHIST_RELIABILITY_BIN` runs the tests against another build, e.g.
/// an older one, to see what they catch).
pub fn bin() -> String {
    std::env::var("CCHIST_RELIABILITY_BIN")
        .unwrap_or_else(|_| crate::common::bin().to_string_lossy().into_owned())
}

/// A secret planted in every synthetic session, to check it never reaches a file name,
/// a report or a message. Shaped like an AWS access key id, so a `redact` stage finds it.
pub const SECRET: &str = "AKIAZ7RELIABLEXTESTQ";

/// xorshift64*: deterministic, seeded, enough for choosing kill moments and gaps.
pub struct Rng(u64);

impl Rng {
    /// Seeded from `CCHIST_TEST_SEED` when set, else from the clock; prints the seed.
    pub fn from_env(what: &str) -> Rng {
        let seed = std::env::var("CCHIST_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("{what}: seed {seed} (set CCHIST_TEST_SEED to replay)");
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn uuid(session: usize, i: usize) -> String {
    format!("{session:08x}-0000-4000-8000-{i:012x}")
}

/// A synthetic session of about `target_bytes`: user prompts, assistant tool calls with their
/// results (long outputs), progress records, the planted [`SECRET`] inside a tool output, and
/// one record whose `parentUuid` names no record (so `relink` must change the file).
pub fn session(session: usize, target_bytes: usize) -> Vec<u8> {
    let sid = format!("{session:08x}-1111-4111-8111-111111111111");
    let mut out = Vec::with_capacity(target_bytes + 4096);
    let mut parent: Option<String> = None;
    let mut i = 0usize;
    let filler = "lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(40);
    let mut turn = 0usize;
    while out.len() < target_bytes {
        turn += 1;
        let push = |v: serde_json::Value, out: &mut Vec<u8>| {
            serde_json::to_writer(&mut *out, &v).unwrap();
            out.push(b'\n');
        };
        let u = uuid(session, i);
        i += 1;
        let p = if turn == 3 {
            // Damage: a parent that is not in the file.
            serde_json::Value::from(uuid(session + 1_000_000, 999))
        } else {
            parent.clone().map_or(serde_json::Value::Null, Into::into)
        };
        push(
            serde_json::json!({"parentUuid": p, "isSidechain": false, "type": "user",
                "message": {"role": "user", "content": format!("prompt {turn}: please look at the files")},
                "uuid": u, "timestamp": "2026-01-01T00:00:00.000Z", "sessionId": sid}),
            &mut out,
        );
        let a = uuid(session, i);
        i += 1;
        let tool = format!("toolu_{session:08x}{turn:08x}");
        push(
            serde_json::json!({"parentUuid": u, "isSidechain": false, "type": "assistant",
                "message": {"id": format!("msg_{session}_{turn}"), "role": "assistant",
                    "content": [{"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": "cat notes.txt"}}]},
                "uuid": a, "timestamp": "2026-01-01T00:00:01.000Z", "sessionId": sid}),
            &mut out,
        );
        push(
            serde_json::json!({"parentUuid": a, "isSidechain": false, "type": "progress",
                "data": {"type": "bash_progress", "output": "running"}, "toolUseID": tool,
                "parentToolUseID": tool, "uuid": uuid(session, 500_000 + turn),
                "timestamp": "2026-01-01T00:00:01.500Z", "sessionId": sid}),
            &mut out,
        );
        let r = uuid(session, i);
        i += 1;
        let secret = if turn % 5 == 1 {
            format!("aws_access_key_id = {SECRET}\n")
        } else {
            String::new()
        };
        push(
            serde_json::json!({"parentUuid": a, "isSidechain": false, "type": "user",
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool,
                    "content": format!("{secret}{filler}")}]},
                "uuid": r, "timestamp": "2026-01-01T00:00:02.000Z", "sessionId": sid,
                "sourceToolAssistantUUID": a}),
            &mut out,
        );
        let t = uuid(session, i);
        i += 1;
        push(
            serde_json::json!({"parentUuid": r, "isSidechain": false, "type": "assistant",
                "message": {"id": format!("msg_{session}_{turn}_b"), "role": "assistant",
                    "content": [{"type": "text", "text": format!("done with turn {turn}")}]},
                "uuid": t, "timestamp": "2026-01-01T00:00:03.000Z", "sessionId": sid}),
            &mut out,
        );
        parent = Some(t);
    }
    out
}

/// A pipeline file that changes every [`session`]: the first stage of `redact`,
/// `drop-tool-noise`, `relink` that is registered and does change them, with default options.
/// Returns the path of a pipeline file (written once per test process) and the stage name.
pub fn changing_pipeline() -> &'static (PathBuf, String) {
    static P: OnceLock<(PathBuf, String)> = OnceLock::new();
    P.get_or_init(|| {
        // Under target/tmp, so repeated runs leave nothing in the system's temp folder.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("reliability-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let probe = dir.join("probe.jsonl");
        std::fs::write(&probe, session(7, 20_000)).unwrap();
        let registered: Vec<&str> = cchist::stages::REGISTRY.iter().map(|d| d.name).collect();
        for stage in ["drop-tool-noise", "redact", "relink"] {
            if !registered.contains(&stage) {
                continue;
            }
            let p = dir.join(format!("{stage}.toml"));
            std::fs::write(
                &p,
                format!(
                    "version = 1\ndescription = \"reliability\"\n\n[[stage]]\ntype = \"{stage}\"\n"
                ),
            )
            .unwrap();
            let out = run_pipeline(&p, &[], &probe);
            if out.status.success() && out.stdout != std::fs::read(&probe).unwrap() {
                eprintln!("reliability tests: changing pipeline uses stage `{stage}`");
                return (p, stage.to_string());
            }
        }
        panic!(
            "no registered stage among drop-tool-noise, redact, relink changes a synthetic \
             session (registered: {registered:?}); the in-place tests need one"
        );
    })
}

/// Runs `cchist run --pipeline <pipeline> <args> <target>` and returns its output.
pub fn run_pipeline(pipeline: &Path, args: &[&str], target: &Path) -> Output {
    Command::new(bin())
        .args(["run", "--pipeline"])
        .arg(pipeline)
        .args(args)
        .arg(target)
        .output()
        .unwrap()
}

/// Run the binary with `args`.
pub fn run(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(bin()).args(args).output().unwrap()
}

/// What the changing pipeline makes of `input` (run to stdout).
pub fn expected_output(input: &Path) -> Vec<u8> {
    let (p, _) = changing_pipeline();
    let out = run_pipeline(p, &[], input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// cchist temp files under `dir` (recursively).
pub fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    fn walk(d: &Path, v: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(&p, v);
            } else if e.file_name().to_string_lossy().contains(".cchist-tmp.") {
                v.push(p);
            }
        }
    }
    walk(dir, &mut v);
    v.sort();
    v
}

/// Exit code, or a panic naming the signal.
pub fn code(o: &Output) -> i32 {
    match o.status.code() {
        Some(c) => c,
        None => panic!(
            "cchist died of a signal: {:?}\nstderr: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ),
    }
}

/// True when running as root (chmod 000 then does not keep us from reading).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The number in the environment variable `var` (how many runs a long test does), else
/// `default`.
pub fn env_runs(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Writes `bytes` to `dir/rel`, creating its folders; returns the path.
pub fn write_under(dir: &Path, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, bytes).unwrap();
    p
}
