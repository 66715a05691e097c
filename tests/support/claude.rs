//! Drive the real Claude Code CLI (pinned to [`CLAUDE_VERSION`]) against [`MockApi`].
//!
//! Rust port of `shared/tools/cc-oracle/oracle.py`. Every run gets a fresh sandbox under the temp
//! dir (its own `HOME`, `CLAUDE_CONFIG_DIR`, `TMPDIR` and project dir); nothing touches the real
//! `~/.claude`, and no network is used.
//!
//! - [`claude_bin`] finds the CLI (`scripts/install-test-tools.sh` installs it), or says why
//!   the test must skip.
//! - [`resume`] / [`Sandbox::resume`] run `claude -p PROBE-CONTINUE --resume ID` and return the
//!   conversation the CLI rebuilt from the transcript ([`Probe::messages`]).
//! - [`generate`] scripts a fresh session (the CLI really runs the tools) and copies its transcript.

use super::mock_api::{Block, MockApi, Request, Turn};
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The Claude Code release these tests pin.
pub const CLAUDE_VERSION: &str = "2.1.328";
/// The prompt a probe sends after `--resume`; it ends up as the last user turn.
pub const PROBE_PROMPT: &str = "PROBE-CONTINUE";
/// What the mock answers to a probe.
pub const PROBE_REPLY: &str = "PROBE-OK";
/// Name prefix of every sandbox dir (see `conversation::normalize`).
pub const SANDBOX_PREFIX: &str = "cchist-probe.";
/// Tools a generated session may run without asking.
const ALLOWED_TOOLS: &str = "Bash Read Write Edit Grep Glob";
const PROBE_TIMEOUT: Duration = Duration::from_secs(90);
const GENERATE_TIMEOUT: Duration = Duration::from_secs(180);

static RUNS: AtomicUsize = AtomicUsize::new(0);

/// How many times this test process has started the real CLI.
pub fn cli_runs() -> usize {
    RUNS.load(Ordering::SeqCst)
}

/// Writes one line to the real stderr, bypassing libtest's capture so it shows in every run.
pub fn note(msg: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "[claude-cli] {msg}");
}

/// `<CARGO_MANIFEST_DIR>/target/claude-cli`: where `scripts/install-test-tools.sh` installs the
/// pinned CLI.
pub fn install_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/claude-cli")
}

/// The CLI binary, from `CCHIST_CLAUDE_BIN` or the pinned install under [`install_dir`]. Tests
/// never install it themselves.
///
/// `None` (with the reason on stderr) when it cannot be found; under CI (`CI` is `true` or `1`)
/// a missing CLI panics so the suite cannot pass vacuously (`common::skip_or_fail`).
pub fn claude_bin() -> Option<PathBuf> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(|| match locate() {
        Ok(bin) => Some(bin),
        Err(why) => {
            crate::common::skip_or_fail(&format!("Claude Code CLI unavailable: {why}"));
            None
        }
    })
    .clone()
}

fn locate() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("CCHIST_CLAUDE_BIN") {
        let p = PathBuf::from(p);
        let v = version_of(&p)
            .ok_or_else(|| format!("CCHIST_CLAUDE_BIN={} does not run", p.display()))?;
        note(&format!("using {} ({v})", p.display()));
        return Ok(p);
    }
    let dir = install_dir();
    if let Some(p) = pinned(&dir) {
        return Ok(p);
    }
    Err(format!(
        "no runnable CLI {CLAUDE_VERSION} under {}: run `. scripts/install-test-tools.sh` (or set CCHIST_CLAUDE_BIN)",
        dir.display()
    ))
}

/// The first candidate under `dir` that reports the pinned version.
fn pinned(dir: &Path) -> Option<PathBuf> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let scope = dir.join("node_modules/@anthropic-ai");
    [
        scope.join(format!("claude-code-linux-{arch}/claude")),
        scope.join(format!("claude-code-linux-{arch}-musl/claude")),
        scope.join("claude-code/bin/claude.exe"),
    ]
    .into_iter()
    .find(|p| version_of(p).is_some_and(|v| v.contains(CLAUDE_VERSION)))
}

fn version_of(bin: &Path) -> Option<String> {
    let out = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Claude Code's project dir name for `path`: every char outside `[A-Za-z0-9]` becomes `-`.
pub fn project_hash(path: &Path) -> String {
    path.to_string_lossy()
        .encode_utf16()
        .map(|u| match char::from_u32(u32::from(u)) {
            Some(c) if c.is_ascii_alphanumeric() => c,
            _ => '-',
        })
        .collect()
}

/// The session id a transcript resumes under: its file stem if that is a UUID, else the first
/// `sessionId` in the file, else a UUID the stem ends with (`owner__repo__<uuid>`).
pub fn session_id_of(transcript: &Path) -> String {
    let stem = transcript.file_stem().and_then(OsStr::to_str).unwrap_or("");
    if is_uuid(stem) {
        return stem.to_owned();
    }
    let text = fs::read_to_string(transcript)
        .unwrap_or_else(|e| panic!("read {}: {e}", transcript.display()));
    let suffix = stem
        .get(stem.len().saturating_sub(36)..)
        .filter(|s| is_uuid(s));
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| {
            v.get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .or_else(|| suffix.map(str::to_owned))
        .unwrap_or_else(|| {
            panic!(
                "{}: no UUID file name and no sessionId",
                transcript.display()
            )
        })
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The outcome of resuming one transcript in the real CLI.
#[derive(Debug)]
pub struct Probe {
    /// Exit status of the CLI; `None` when it timed out and was killed.
    pub exit_status: Option<ExitStatus>,
    /// The CLI's stdout (`--output-format json`).
    pub stdout: String,
    /// The CLI's stderr.
    pub stderr: String,
    /// `messages` of the first request carrying `tools`: the conversation rebuilt from the file.
    pub messages: Option<Vec<Value>>,
    /// Messages-API shape violations the mock rejected with HTTP 400.
    pub shape_errors: Vec<String>,
    /// Every request the CLI sent to the mock.
    pub requests: Vec<Request>,
    /// The session id that was resumed.
    pub session_id: String,
}

impl Probe {
    /// `session_id` from the CLI's JSON output: differs from [`Probe::session_id`] after
    /// `--fork-session`.
    pub fn reported_session_id(&self) -> Option<String> {
        let v: Value = serde_json::from_str(&self.stdout).ok()?;
        v.get("session_id")?.as_str().map(str::to_owned)
    }

    /// The rebuilt conversation; panics (naming `what`) unless the CLI exited 0, the mock saw a
    /// main-loop request and no request broke the API's shape rules.
    pub fn expect_ok(&self, what: &str) -> &[Value] {
        let ok = self.exit_status.is_some_and(|s| s.success());
        match (&self.messages, ok, self.shape_errors.is_empty()) {
            (Some(m), true, true) => m,
            _ => panic!(
                "resume of {what} failed: exit {:?}, {} requests, shape errors {:?}\nstderr: {}\nstdout: {}",
                self.exit_status,
                self.requests.len(),
                self.shape_errors,
                tail(&self.stderr, 2000),
                tail(&self.stdout, 1000)
            ),
        }
    }
}

/// Output of one CLI run.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Exit status; `None` when it timed out and was killed.
    pub status: Option<ExitStatus>,
    /// What the CLI printed on stdout.
    pub stdout: String,
    /// What the CLI printed on stderr.
    pub stderr: String,
}

impl RunOutput {
    /// The `session_id` the CLI reported (JSON output, or any stream-json line).
    pub fn session_id(&self) -> Option<String> {
        self.stdout.lines().rev().find_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            v.get("session_id")?.as_str().map(str::to_owned)
        })
    }
}

/// How the CLI prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// `--output-format json`: one object at the end.
    Json,
    /// `--output-format stream-json --verbose`: one event per line (hook messages included).
    StreamJson,
}

/// A throwaway `HOME` + `CLAUDE_CONFIG_DIR` + project dir; deleted on drop.
pub struct Sandbox {
    _dir: TempDir,
    root: PathBuf,
    home: PathBuf,
    config_dir: PathBuf,
    proj: PathBuf,
}

impl Sandbox {
    /// Creates `<tmp>/cchist-probe.XXXXXX/{home/.claude, proj, tmp}`.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix(SANDBOX_PREFIX)
            .tempdir()
            .expect("create sandbox dir");
        let root = dir.path().canonicalize().expect("canonical sandbox path");
        let (home, proj) = (root.join("home"), root.join("proj"));
        let config_dir = home.join(".claude");
        for d in [&proj, &config_dir.join("projects"), &root.join("tmp")] {
            fs::create_dir_all(d).expect("create sandbox subdir");
        }
        Sandbox {
            _dir: dir,
            root,
            home,
            config_dir,
            proj,
        }
    }

    /// The sandbox root (canonical path).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `$CLAUDE_CONFIG_DIR` of the CLI runs.
    pub fn config_dir(&self) -> &Path {
        &self.config_dir
    }

    /// The working directory of the CLI runs.
    pub fn proj(&self) -> &Path {
        &self.proj
    }

    /// `$CLAUDE_CONFIG_DIR/projects/<hash of proj>`: where session files live.
    pub fn project_dir(&self) -> PathBuf {
        self.config_dir
            .join("projects")
            .join(project_hash(&self.proj))
    }

    /// Path of the session file for `session_id`.
    pub fn session_file(&self, session_id: &str) -> PathBuf {
        self.project_dir().join(format!("{session_id}.jsonl"))
    }

    /// Copies `transcript` (and its companion dir `<stem>/`, if any) into the project dir as
    /// `<session id>.jsonl` (+ `<session id>/`); returns the session id.
    pub fn install(&self, transcript: &Path) -> String {
        let sid = session_id_of(transcript);
        fs::create_dir_all(self.project_dir()).expect("create project dir");
        fs::copy(transcript, self.session_file(&sid)).expect("copy transcript into sandbox");
        let companion = transcript.with_extension("");
        if companion.is_dir() {
            copy_dir(&companion, &self.project_dir().join(&sid), &[]);
        }
        sid
    }

    /// Runs `claude -p PROBE-CONTINUE --resume SESSION_ID EXTRA…` in this sandbox (the session
    /// must already be in [`Sandbox::project_dir`]); `None` when the CLI is unavailable.
    pub fn resume(&self, session_id: &str, extra_args: &[&str]) -> Option<Probe> {
        let bin = claude_bin()?;
        let mock = MockApi::start(vec![vec![Block::text(PROBE_REPLY)]]).expect("start mock API");
        let mut args = vec!["-p", PROBE_PROMPT, "--resume", session_id];
        args.extend_from_slice(extra_args);
        let out = self.run(
            &bin,
            &mock,
            &args,
            PROBE_TIMEOUT,
            &format!("resume {session_id}"),
            OutputFormat::Json,
        );
        Some(Probe {
            exit_status: out.status,
            stdout: out.stdout,
            stderr: out.stderr,
            messages: mock.conversation(),
            shape_errors: mock.shape_errors(),
            requests: mock.requests(),
            session_id: session_id.to_owned(),
        })
    }

    /// Runs the CLI once with `args` against `mock` in this sandbox (`None` without a CLI);
    /// killed after the generate timeout.
    pub fn cli(
        &self,
        mock: &MockApi,
        args: &[&str],
        format: OutputFormat,
        label: &str,
    ) -> Option<RunOutput> {
        self.cli_env(mock, args, format, label, &[])
    }

    /// [`Sandbox::cli`] with `env` set for the CLI alone (a test must not set the variables
    /// of its whole process: tests run in parallel).
    pub fn cli_env(
        &self,
        mock: &MockApi,
        args: &[&str],
        format: OutputFormat,
        label: &str,
        env: &[(&str, &str)],
    ) -> Option<RunOutput> {
        let bin = claude_bin()?;
        Some(self.run_env(&bin, mock, args, GENERATE_TIMEOUT, label, format, env))
    }

    /// Runs the CLI once with `args` (+ the output format) against `mock`, killing its
    /// process group after `timeout`.
    fn run(
        &self,
        bin: &Path,
        mock: &MockApi,
        args: &[&str],
        timeout: Duration,
        label: &str,
        format: OutputFormat,
    ) -> RunOutput {
        self.run_env(bin, mock, args, timeout, label, format, &[])
    }

    /// [`Sandbox::run`] with `env` added.
    #[allow(clippy::too_many_arguments)]
    fn run_env(
        &self,
        bin: &Path,
        mock: &MockApi,
        args: &[&str],
        timeout: Duration,
        label: &str,
        format: OutputFormat,
        env: &[(&str, &str)],
    ) -> RunOutput {
        let n = RUNS.fetch_add(1, Ordering::SeqCst) + 1;
        let (out_path, err_path) = (
            self.root.join(format!("run{n}.out")),
            self.root.join(format!("run{n}.err")),
        );
        let mut cmd = Command::new(bin);
        let format_args: &[&str] = match format {
            OutputFormat::Json => &["--output-format", "json"],
            OutputFormat::StreamJson => &["--output-format", "stream-json", "--verbose"],
        };
        cmd.args(args)
            .args(format_args)
            .current_dir(&self.proj)
            .stdin(Stdio::null())
            .stdout(File::create(&out_path).expect("stdout file"))
            .stderr(File::create(&err_path).expect("stderr file"))
            .process_group(0);
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("ANTHROPIC") || k.starts_with("CLAUDE") || k.starts_with("XDG_") {
                cmd.env_remove(&key);
            }
        }
        cmd.env("HOME", &self.home)
            .env("CLAUDE_CONFIG_DIR", &self.config_dir)
            .env("TMPDIR", self.root.join("tmp"))
            .env("ANTHROPIC_API_KEY", "sk-ant-dummy")
            .env("ANTHROPIC_BASE_URL", mock.base_url())
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let start = Instant::now();
        let mut child = cmd.spawn().expect("spawn claude");
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait for claude") {
                break Some(s);
            }
            if start.elapsed() > timeout {
                // SAFETY: signals the process group we created for this child only.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let verdict = status.map_or_else(|| "TIMED OUT, killed".to_owned(), |s| s.to_string());
        note(&format!(
            "run #{n} ({label}): {verdict} in {:.2}s",
            start.elapsed().as_secs_f64()
        ));
        RunOutput {
            status,
            stdout: fs::read_to_string(out_path).unwrap_or_default(),
            stderr: fs::read_to_string(err_path).unwrap_or_default(),
        }
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    /// `cchist ARGS` in the project folder on this config folder, which must succeed.
    pub fn cchist(&self, args: &[&str]) -> std::process::Output {
        crate::common::ok(
            crate::common::cchist()
                .args(args)
                .env("CLAUDE_CONFIG_DIR", self.config_dir())
                .current_dir(self.proj()),
        )
    }
}

impl Sandbox {
    /// Runs `scenario` in this sandbox (files, then one CLI process per prompt, the mock
    /// answering with its scripted turns); returns the session id. `None` without a CLI.
    pub fn play(&self, scenario: &Scenario) -> Option<String> {
        self.play_runs(scenario, OutputFormat::Json)
            .map(|(sid, _)| sid)
    }

    /// [`Sandbox::play`], returning each prompt's CLI output too.
    pub fn play_runs(
        &self,
        scenario: &Scenario,
        format: OutputFormat,
    ) -> Option<(String, Vec<RunOutput>)> {
        let bin = claude_bin()?;
        let sb = self;
        for (rel, text) in &scenario.files {
            let p = sb.proj.join(rel);
            fs::create_dir_all(p.parent().expect("file parent")).expect("create scenario dir");
            fs::write(p, text).expect("write scenario file");
        }
        let mock = MockApi::start(Vec::new()).expect("start mock API");
        let proj = sb.proj.to_string_lossy().into_owned();
        let mut sid: Option<String> = None;
        let mut runs = Vec::new();
        for (i, step) in scenario.prompts.iter().enumerate() {
            let turns = step.turns.iter().map(|t| {
                t.iter()
                    .map(|b| match b {
                        Block::Tool { name, input } => {
                            let s = input.to_string().replace("$PROJ", &proj);
                            Block::tool(name, serde_json::from_str(&s).expect("tool input"))
                        }
                        other => other.clone(),
                    })
                    .collect()
            });
            mock.set_script(turns.collect());
            let mut args = vec!["-p", step.prompt.as_str(), "--allowedTools", ALLOWED_TOOLS];
            if let Some(s) = &sid {
                args.extend(["--resume", s.as_str()]);
            }
            let label = format!("generate {} prompt {}", scenario.name, i + 1);
            let out = sb.run(&bin, &mock, &args, GENERATE_TIMEOUT, &label, format);
            let errors = mock.shape_errors();
            assert!(
                out.status.is_some_and(|s| s.success()) && errors.is_empty(),
                "{label} failed: exit {:?}, shape errors {errors:?}\nstderr: {}\nstdout: {}",
                out.status,
                tail(&out.stderr, 2000),
                tail(&out.stdout, 1000)
            );
            sid = Some(out.session_id().expect("session_id in CLI output"));
            runs.push(out);
        }
        Some((sid.expect("scenario has at least one prompt"), runs))
    }
}

/// Resumes `transcript` in a fresh sandbox; `None` when the CLI is unavailable (test skips).
pub fn resume(transcript: &Path) -> Option<Probe> {
    claude_bin()?;
    let sandbox = Sandbox::new();
    let sid = sandbox.install(transcript);
    sandbox.resume(&sid, &[])
}

/// [`resume`] of `a` and of `b`, run at once; panics without a CLI.
pub fn resume_both(a: &Path, b: &Path) -> (Probe, Probe) {
    std::thread::scope(|s| {
        let pa = s.spawn(|| resume(a));
        let pb = resume(b);
        (
            pa.join().expect("resume thread").expect("CLI"),
            pb.expect("CLI"),
        )
    })
}

/// One prompt of a [`Scenario`] and the assistant turns the mock answers it with.
#[derive(Clone, Debug)]
pub struct Prompt {
    /// The user prompt (`claude -p`).
    pub prompt: String,
    /// Scripted assistant turns; `$PROJ` in tool inputs becomes the project dir.
    pub turns: Vec<Turn>,
}

/// A fake AWS secret, built at run time so the repository itself holds no secret-looking literal.
pub fn planted_secret() -> String {
    format!("wJalrXUtnFEMI/K7MDENG/{}", "bPxRfiCYzzzzKEYtest")
}

/// A session `name` whose project holds `.env` with the [`planted_secret`] (then `more_files`)
/// and one prompt whose Bash call prints it.
pub fn env_secret_scenario(name: &str, more_files: Vec<(String, String)>) -> Scenario {
    let mut files = vec![(
        ".env".into(),
        format!("AWS_SECRET_ACCESS_KEY={}\n", planted_secret()),
    )];
    files.extend(more_files);
    Scenario {
        name: name.into(),
        files,
        prompts: vec![Prompt {
            prompt: "What is in .env?".into(),
            turns: vec![
                vec![Block::tool(
                    "Bash",
                    json!({"command": "cat .env", "description": "Show env"}),
                )],
                vec![Block::text("It holds an AWS secret key.")],
            ],
        }],
    }
}

/// A scripted session, as in `shared/tools/cc-oracle/scenarios/*.json`.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Name of the output transcript (`<name>.jsonl`) and of the neutral project path.
    pub name: String,
    /// Files (relative path, content) created in the project dir before the first prompt.
    pub files: Vec<(String, String)>,
    /// The prompts, run one CLI process each (`--resume` from the second on).
    pub prompts: Vec<Prompt>,
}

impl Scenario {
    /// Loads a cc-oracle scenario file.
    pub fn from_oracle_file(path: &Path) -> Self {
        let v: Value = serde_json::from_str(&fs::read_to_string(path).expect("read scenario"))
            .expect("scenario JSON");
        let files = v["files"].as_object().map_or_else(Vec::new, |m| {
            m.iter()
                .map(|(k, t)| (k.clone(), t.as_str().unwrap_or_default().to_owned()))
                .collect()
        });
        let prompts = v["prompts"]
            .as_array()
            .expect("prompts")
            .iter()
            .map(|p| Prompt {
                prompt: p["prompt"].as_str().expect("prompt text").to_owned(),
                turns: p["turns"]
                    .as_array()
                    .expect("turns")
                    .iter()
                    .map(|t| {
                        t.as_array()
                            .expect("turn")
                            .iter()
                            .map(|b| Block::from_oracle_json(b).expect("block"))
                            .collect()
                    })
                    .collect(),
            });
        Scenario {
            name: v["name"].as_str().expect("name").to_owned(),
            files,
            prompts: prompts.collect(),
        }
    }
}

/// Runs `scenario` in the real CLI (tools really run) and copies the transcript it wrote, plus
/// its companion dir, to `out_dir/<name>.jsonl` (`out_dir/<name>/`), with the sandbox paths
/// rewritten to `/home/dev/<name>`. `None` when the CLI is unavailable; panics if a step fails.
pub fn generate(scenario: &Scenario, out_dir: &Path) -> Option<PathBuf> {
    let sb = Sandbox::new();
    let sid = sb.play(scenario)?;
    let proj = sb.proj.to_string_lossy().into_owned();
    let fake_proj = PathBuf::from(format!("/home/dev/{}", scenario.name));
    let swaps = [
        (proj.clone(), fake_proj.to_string_lossy().into_owned()),
        (project_hash(&sb.proj), project_hash(&fake_proj)),
        (
            sb.home.to_string_lossy().into_owned(),
            "/home/dev".to_owned(),
        ),
        (
            sb.root.to_string_lossy().into_owned(),
            "/home/dev/.cache".to_owned(),
        ),
    ];
    fs::create_dir_all(out_dir).expect("create out dir");
    let dest = out_dir.join(format!("{}.jsonl", scenario.name));
    copy_swapped(&sb.session_file(&sid), &dest, &swaps);
    let companion = sb.project_dir().join(&sid);
    if companion.is_dir() {
        copy_dir(&companion, &out_dir.join(&scenario.name), &swaps);
    }
    Some(dest)
}

/// Copies `src` to `dst`, replacing each `(from, to)` in order when the file is UTF-8.
fn copy_swapped(src: &Path, dst: &Path, swaps: &[(String, String)]) {
    let data = fs::read(src).expect("read file to copy");
    let data = match String::from_utf8(data) {
        Ok(mut s) => {
            for (from, to) in swaps {
                s = s.replace(from.as_str(), to);
            }
            s.into_bytes()
        }
        Err(e) => e.into_bytes(),
    };
    fs::write(dst, data).expect("write copied file");
}

/// Recursively copies `src` into `dst`, applying `swaps` (`(from, to)` string replacements) to
/// UTF-8 files; pass `&[]` for a plain copy.
pub fn copy_dir(src: &Path, dst: &Path, swaps: &[(String, String)]) {
    fs::create_dir_all(dst).expect("create dir copy");
    for entry in fs::read_dir(src).expect("read dir to copy") {
        let entry = entry.expect("dir entry");
        let to = dst.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &to, swaps);
        } else {
            copy_swapped(&entry.path(), &to, swaps);
        }
    }
}

/// The last `max` bytes of `s` (on a char boundary).
fn tail(s: &str, max: usize) -> &str {
    let mut i = s.len().saturating_sub(max);
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

/// One CLI process holding a session across prompts (`--input-format stream-json`): what an
/// interactive session is, as opposed to [`Sandbox::play`]'s one process per prompt, which
/// rereads the transcript each time.
pub struct Live {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    /// Every stdout line so far.
    pub stdout: Vec<String>,
    /// The session id, once the CLI said it.
    pub session_id: Option<String>,
}

impl Sandbox {
    /// Starts the CLI against `mock` reading prompts from stdin (`None` without a CLI). `extra`
    /// is added to its arguments (`--resume ID` …).
    pub fn live(&self, mock: &MockApi, extra: &[&str]) -> Option<Live> {
        let bin = claude_bin()?;
        let mut cmd = Command::new(bin);
        cmd.args([
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--allowedTools",
            ALLOWED_TOOLS,
        ])
        .args(extra)
        .current_dir(&self.proj)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(File::create(self.root.join("live.err")).expect("stderr file"))
        .process_group(0);
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("ANTHROPIC") || k.starts_with("CLAUDE") || k.starts_with("XDG_") {
                cmd.env_remove(&key);
            }
        }
        cmd.env("HOME", &self.home)
            .env("CLAUDE_CONFIG_DIR", &self.config_dir)
            .env("TMPDIR", self.root.join("tmp"))
            .env("ANTHROPIC_API_KEY", "sk-ant-dummy")
            .env("ANTHROPIC_BASE_URL", mock.base_url())
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1");
        RUNS.fetch_add(1, Ordering::SeqCst);
        let mut child = cmd.spawn().expect("spawn claude");
        let stdin = child.stdin.take();
        let out = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for l in io::BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Some(Live {
            child,
            stdin,
            lines: rx,
            stdout: Vec::new(),
            session_id: None,
        })
    }
}

impl Live {
    /// Sends one prompt and waits for its `result` event (panics after the generate timeout);
    /// returns the lines printed meanwhile.
    pub fn send(&mut self, prompt: &str) -> Vec<String> {
        let msg = json!({"type": "user", "message": {"role": "user", "content": prompt}});
        let stdin = self.stdin.as_mut().expect("session still open");
        writeln!(stdin, "{msg}").expect("write prompt");
        stdin.flush().expect("flush prompt");
        let start = Instant::now();
        let mut got = Vec::new();
        loop {
            let left = GENERATE_TIMEOUT.saturating_sub(start.elapsed());
            let l = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no result for {prompt:?}; got {got:?}"));
            self.stdout.push(l.clone());
            let v: Value = serde_json::from_str(&l).unwrap_or(Value::Null);
            if let Some(s) = v.get("session_id").and_then(Value::as_str) {
                self.session_id.get_or_insert_with(|| s.to_owned());
            }
            got.push(l);
            if v["type"] == "result" {
                return got;
            }
        }
    }

    /// Closes stdin (the session ends, SessionEnd hooks run) and waits for the exit.
    pub fn close(mut self) -> Option<ExitStatus> {
        drop(self.stdin.take());
        let start = Instant::now();
        loop {
            while let Ok(l) = self.lines.try_recv() {
                self.stdout.push(l);
            }
            if let Some(s) = self.child.try_wait().expect("wait for claude") {
                return Some(s);
            }
            if start.elapsed() > GENERATE_TIMEOUT {
                // SAFETY: signals the process group we created for this child only.
                unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
                let _ = self.child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
