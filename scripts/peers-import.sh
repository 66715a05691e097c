#!/usr/bin/env bash
# `cchist import` side by side with other converters (issue #26): the same hand-made Codex and
# Gemini fixtures (tests/fixtures/import, `@@CWD@@` and `@@SECRET@@` filled as
# tests/it/import.rs does) go through each converter from PyPI, laid out under a fresh temp HOME
# as the tool expects (~/.codex/sessions/YYYY/MM/DD, ~/.gemini/tmp/<project>/chats), and what it
# writes into ~/.claude/projects is checked mechanically:
#
#   rollback   Codex `thread_rolled_back {num_turns: 1}` / Gemini `$rewindTo`: is the discarded
#              turn (its prompt, its reply) in the output?
#   secret     is the planted AWS secret key in the transcript, and in any other file the tool
#              wrote outside the source trees?
#   tools      the tool_use blocks: on a Claude Code tool with the fields that tool takes
#              (Bash{command: string}, Read{file_path}, Write{file_path, content},
#              Edit{file_path, old_string, new_string}, Glob{pattern}), on a Claude tool with
#              other fields (Bash{command: [..]}, Read{file_path: ""}, an Edit holding patch
#              text), or on a tool Claude Code does not have (shell, exec_command, …); none at
#              all means the calls were folded into prose or dropped.
#   thinking / ids   thinking blocks without a signature; record uuids that are not UUIDs,
#              tool ids outside ^[A-Za-z0-9_-]+$, a sessionId that is not the file's name.
#   validate   `cchist validate --strict` findings (rule × count).
#   resume     the pinned Claude Code CLI run as `claude -p PROBE-CONTINUE --resume ID` from the
#              project dir, against a loopback mock of the Messages API: did it send the
#              conversation (how many messages, whether the first prompt, the discarded turn or
#              the secret reached the model)?
#
#   scripts/peers-import.sh      (by hand; cargo test does not run it)
#
# Needs python3 with venv and pip reaching PyPI, cargo, and for the resume column the pinned CLI
# (scripts/install-test-tools.sh, or CCHIST_CLAUDE_BIN). The converters are installed at run
# time into target/peers-import-venv; none of their code is kept in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$PWD/target/peers-import-venv
PEERS="session-migrate==0.12.0 ectype-cli==0.3.3 agent-migrator==0.1.1 claude-session-teleporter==1.3.0
  claude-codex-sessions==0.1.0 harness-convert==0.6.0 seshport==0.3.0 agent-session-bridge==0.5.0"
missing=0
for bin in smigrate ectype agent-migrator claude-sessions claude-codex-sessions hc seshport session-bridge; do
  [ -x "$VENV/bin/$bin" ] || missing=1
done
if [ "$missing" = 1 ]; then
  python3 -m venv "$VENV"
  # shellcheck disable=SC2086
  "$VENV/bin/pip" install --quiet $PEERS
fi
cargo build --quiet
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
CLAUDE=${CCHIST_CLAUDE_BIN:-$PWD/target/claude-cli/node_modules/@anthropic-ai/claude-code-linux-x64/claude}
python3 - "$PWD" "$VENV/bin" "$TARGET/debug/cchist" "$CLAUDE" <<'PY'
import http.server, json, os, re, shutil, subprocess, sys, tempfile, threading

repo, venv, cchist, claude = sys.argv[1:5]
SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzzzzKEYimport"  # as tests/it/import.rs::planted
CODEX = "rollout-2026-11-30T10-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl"
GEMINI = "session-2026-11-30T10-00-0199bbbb.jsonl"
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TOOL_ID = re.compile(r"^[A-Za-z0-9_-]+$")
# What the source holds: the discarded turn's two texts, and the first prompt.
SOURCES = {
    "codex": {"discarded": ("ROLLED-BACK-PROMPT", "ROLLED-BACK-REPLY"),
              "first": "List the files and show me config.env", "id": "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"},
    "gemini": {"discarded": ("REWOUND-PROMPT", "REWOUND-REPLY"),
               "first": "Show me config.env", "id": "0199bbbb-cccc-7ddd-8eee-ffffffffffff"},
}


def lay_out(home, proj, cut_rollback=False):
    """The two fixtures, filled, where Codex and Gemini CLI keep them; with `cut_rollback`, the
    Codex rollout without its `thread_rolled_back` line (for a tool that refuses it)."""
    os.makedirs(os.path.join(proj, "src"))
    os.makedirs(os.path.join(home, ".claude"))  # Claude Code is installed (agent-migrator checks)
    for rel, dest in ((f"codex/{CODEX}", f".codex/sessions/2026/11/30/{CODEX}"),
                      (f"gemini/{GEMINI}", f".gemini/tmp/{os.path.basename(proj)}/chats/{GEMINI}")):
        text = open(os.path.join(repo, "tests/fixtures/import", rel)).read()
        text = text.replace("@@CWD@@", proj).replace("@@SECRET@@", SECRET)
        if cut_rollback:
            text = "".join(l for l in text.splitlines(True) if '"thread_rolled_back"' not in l)
        path = os.path.join(home, dest)
        os.makedirs(os.path.dirname(path))
        open(path, "w").write(text)


def tool_env(home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC", "CLAUDE", "CODEX", "GEMINI", "XDG_"))}
    env.update(HOME=home, NO_COLOR="1", TERM="dumb")
    return env


def run(argv, home, proj):
    return subprocess.run(argv, cwd=proj, env=tool_env(home), capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


# Each converter: (name shown, sources it reads, argv for a source).
def cchist_argv(src, proj):
    return [cchist, "import", "--from", src, "--latest"]


def smigrate_argv(src, proj):
    return [f"{venv}/smigrate", "transfer", SOURCES[src]["id"], "--from", src, "--to", "claude", "--cwd", proj]


def ectype_argv(redact):
    def argv(src, proj):
        agent = {"codex": "codex", "gemini": "gemini-cli"}[src]
        a = [f"{venv}/ectype", "convert", SOURCES[src]["id"][:8], "-a", agent, "--to", "claude-code",
             "--install", "--workspace", proj]
        return a + (["--redact"] if redact else [])
    return argv


def migrator_argv(src, proj):
    return [f"{venv}/agent-migrator", "move", "--from", src, "--to", "claude-code",
            "--id", SOURCES[src]["id"], "--dir", proj]


def teleporter_argv(src, proj):
    home = os.path.dirname(proj)
    return [f"{venv}/claude-sessions", "teleport", f"{home}/.codex/sessions/2026/11/30/{CODEX}",
            "--to", "claude", "--cwd", proj, "--apply"]


def ccs_argv(output):
    return lambda src, proj: [f"{venv}/claude-codex-sessions", "import"] + (["--with-tool-output"] if output else [])


def hc_argv(src, proj):
    return [f"{venv}/hc", "--from", "codex", "--to", "claude", SOURCES[src]["id"], "-y", "--dest-cwd", proj]


def seshport_argv(src, proj):
    return [f"{venv}/seshport", SOURCES[src]["id"], "claude"]


def bridge_argv(src, proj):
    home = os.path.dirname(proj)
    return [f"{venv}/session-bridge", "convert", "--from", "codex", f"{home}/.codex/sessions/2026/11/30/{CODEX}",
            "--to", "claude-code", "--place-claude-cwd", proj]


def version(pkg):
    out = subprocess.run([f"{venv}/pip", "show", pkg], capture_output=True, text=True).stdout
    return next((l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("Version:")), "?")


def cchist_version():
    return subprocess.run([cchist, "--version"], capture_output=True, text=True).stdout.split()[-1]


CONVERTERS = [
    (f"`cchist import` {cchist_version()}", ("codex", "gemini"), cchist_argv),
    (f"session-migrate {version('session-migrate')}", ("codex",), smigrate_argv),
    (f"ectype-cli {version('ectype-cli')}", ("codex", "gemini"), ectype_argv(False)),
    (f"ectype-cli {version('ectype-cli')} `--redact`", ("codex", "gemini"), ectype_argv(True)),
    (f"agent-migrator {version('agent-migrator')}", ("codex", "gemini"), migrator_argv),
    (f"claude-codex-sessions {version('claude-codex-sessions')}", ("codex",), ccs_argv(False)),
    (f"claude-codex-sessions {version('claude-codex-sessions')} `--with-tool-output`", ("codex",), ccs_argv(True)),
    (f"harness-convert {version('harness-convert')}", ("codex",), hc_argv),
    (f"seshport {version('seshport')}", ("codex",), seshport_argv),
    (f"agent-session-bridge {version('agent-session-bridge')}", ("codex",), bridge_argv),
    (f"claude-session-teleporter {version('claude-session-teleporter')}", ("codex",), teleporter_argv),
    (f"claude-session-teleporter {version('claude-session-teleporter')}, the rollback line cut",
     ("codex",), teleporter_argv),
]


def blocks(rec):
    c = (rec.get("message") or {}).get("content")
    return c if isinstance(c, list) else []


def is_str(v, nonempty=True):
    return isinstance(v, str) and (v != "" or not nonempty)


PATCH = re.compile(r"^(@@|\*\*\* )", re.M)
SCHEMA = {
    "Bash": lambda i: is_str(i.get("command")),
    "Read": lambda i: is_str(i.get("file_path")) and i["file_path"].startswith("/"),
    "Write": lambda i: is_str(i.get("file_path")) and is_str(i.get("content"), False),
    "Edit": lambda i: is_str(i.get("file_path")) and is_str(i.get("old_string"), False)
    and is_str(i.get("new_string"), False) and not PATCH.search(i["old_string"] + "\n" + i["new_string"]),
    "Glob": lambda i: is_str(i.get("pattern")),
    "Grep": lambda i: is_str(i.get("pattern")),
}


def shape(name, inp):
    """`Bash{command: [..]}`: the fields a call has, their JSON types."""
    if not isinstance(inp, dict):
        return f"{name}({type(inp).__name__})"
    if name == "Edit" and SCHEMA["Edit"]({**inp, "old_string": "", "new_string": ""}):
        return "Edit{old_string: patch hunk}"
    kinds = {str: "", list: ": [..]", dict: ": {..}"}
    fields = []
    for k, v in inp.items():
        if k in ("timeout", "description", "timeout_ms", "workdir"):
            continue
        mark = kinds.get(type(v), ": " + type(v).__name__)
        fields.append(k + (': ""' if v == "" else mark))
    return f"{name}{{{', '.join(fields)}}}"


def inspect(path, src):
    text = open(path, errors="replace").read()
    recs = []
    for line in text.splitlines():
        try:
            recs.append(json.loads(line))
        except ValueError:
            pass
    disc = SOURCES[src]["discarded"]
    back = [d.split("-")[-1].lower() for d in disc if d in text]
    rollback = "applied" if not back else "comes back (" + " + ".join(back) + ")"
    good, wrong, foreign = 0, [], []
    unsigned = 0
    bad_ids = []
    for r in recs:
        u = r.get("uuid")
        if u is not None and not UUID.match(str(u)):
            bad_ids.append("uuid")
        sid = r.get("sessionId")
        if sid is not None and sid != os.path.basename(path)[:-6]:
            bad_ids.append("sessionId")
        for b in blocks(r):
            if not isinstance(b, dict):
                continue
            if b.get("type") == "thinking" and not b.get("signature"):
                unsigned += 1
            if b.get("type") == "tool_use":
                if not TOOL_ID.match(str(b.get("id", ""))):
                    bad_ids.append("tool id")
                name, inp = b.get("name"), b.get("input")
                if name in SCHEMA:
                    if isinstance(inp, dict) and SCHEMA[name](inp):
                        good += 1
                    else:
                        wrong.append(shape(name, inp))
                else:
                    foreign.append(shape(name, inp))
    if good + len(wrong) + len(foreign) == 0:
        tools = "no tool_use: calls folded into text"
    else:
        parts = [f"{good} in Claude's schema"]
        if wrong:
            parts.append(f"{len(wrong)} with other input: " + ", ".join(f"`{w}`" for w in wrong))
        if foreign:
            parts.append(f"{len(foreign)} not a Claude tool: " + ", ".join(f"`{f}`" for f in foreign))
        tools = "; ".join(parts)
    ids = sorted(set(bad_ids))
    ids_cell = f"{unsigned} unsigned thinking; " + ("ids ok" if not ids else
                                                    ", ".join(f"{bad_ids.count(i)} bad {i}" for i in ids))
    return text, rollback, tools, ids_cell


def validate(path):
    p = subprocess.run([cchist, "validate", "--strict", "--format", "json", path], capture_output=True, text=True)
    try:
        findings = [f for fl in json.loads(p.stdout)["files"] for f in fl["findings"]]
    except (ValueError, KeyError):
        return f"exit {p.returncode}"
    if not findings:
        return "clean"
    rules = [f["rule"] for f in findings]
    return ", ".join(f"`{r}` ×{rules.count(r)}" for r in sorted(set(rules)))


class Mock(http.server.BaseHTTPRequestHandler):
    """Answers every Messages request with one text block; keeps each request body."""
    protocol_version = "HTTP/1.1"
    bodies = []

    def log_message(self, *a):
        pass

    def reply(self, body, ctype="application/json"):
        self.send_response(200)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.reply(b"{}")

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        try:
            req = json.loads(raw)
        except ValueError:
            req = {}
        Mock.bodies.append(req)
        if "count_tokens" in self.path:
            return self.reply(b'{"input_tokens": 100}')
        text = "PROBE-OK" if req.get("tools") else "Session notes."
        msg = {"id": "msg_probe", "type": "message", "role": "assistant", "model": req.get("model", "m"),
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 1200, "output_tokens": 1}}
        if not req.get("stream"):
            msg.update(content=[{"type": "text", "text": text}], stop_reason="end_turn")
            return self.reply(json.dumps(msg).encode())
        ev = []
        add = lambda t, d: ev.append("event: %s\ndata: %s\n\n" % (t, json.dumps(dict(type=t, **d))))
        add("message_start", {"message": msg})
        add("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
        add("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}})
        add("content_block_stop", {"index": 0})
        add("message_delta", {"delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 1}})
        add("message_stop", {})
        self.reply("".join(ev).encode(), "text/event-stream")


def resume(path, home, proj, src, cut=False):
    if not os.access(claude, os.X_OK):
        return "not run (no CLI)"
    folder = os.path.basename(os.path.dirname(path))
    if folder != re.sub(r"[^A-Za-z0-9]", "-", proj):
        return f"**no**: filed under `projects/{folder}`, not the project's folder"
    Mock.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Mock)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = tool_env(home)
    env.update(CLAUDE_CONFIG_DIR=os.path.join(home, ".claude"), TMPDIR=os.path.join(home, "tmp"),
               ANTHROPIC_API_KEY="sk-ant-dummy", ANTHROPIC_BASE_URL=f"http://127.0.0.1:{server.server_port}",
               DISABLE_TELEMETRY="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1")
    os.makedirs(env["TMPDIR"], exist_ok=True)
    sid = os.path.basename(path)[:-6]
    try:
        p = subprocess.run([claude, "-p", "PROBE-CONTINUE", "--resume", sid, "--output-format", "json"],
                           cwd=proj, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        code, err = p.returncode, (p.stdout + p.stderr).strip().splitlines()
    except subprocess.TimeoutExpired:
        code, err = "timeout", []
    finally:
        server.shutdown()
        server.server_close()
    sent = next((b["messages"] for b in Mock.bodies if b.get("tools")), None)
    if code != 0 or sent is None:
        why = err[-1][:80] if err else "no request"
        return f"**no** (exit {code}: {why})"
    wire = json.dumps(sent)
    notes = [f"{len(sent)} messages"]
    if SOURCES[src]["first"] not in wire:
        notes.append("first prompt missing")
    if any(d in wire for d in SOURCES[src]["discarded"]) and not cut:
        notes.append("discarded turn sent")
    if SECRET in wire:
        notes.append("**secret sent**")
    unsigned = sum(1 for m in sent if isinstance(m.get("content"), list) for b in m["content"]
                   if isinstance(b, dict) and b.get("type") == "thinking" and not b.get("signature"))
    if unsigned:
        notes.append(f"**{unsigned} unsigned thinking sent**")
    return "yes: " + ", ".join(notes)


def one(name, src, argv_of):
    # Letters and digits only: agent-migrator names the project folder by replacing `/` and `:`
    # alone, so a `.` or `_` in the path (as mkdtemp makes) would file its output elsewhere.
    base = os.path.join(os.path.realpath(tempfile.gettempdir()), "peersimport" + os.urandom(6).hex())
    os.mkdir(base, 0o700)
    try:
        home, proj = base, os.path.join(base, "proj")
        cut = name.endswith("the rollback line cut")
        lay_out(home, proj, cut)
        before = set()
        for root, _, files in os.walk(home):
            before.update(os.path.join(root, f) for f in files)
        p = run(argv_of(src, proj), home, proj)
        written = []
        for root, _, files in os.walk(home):
            written += [os.path.join(root, f) for f in files if os.path.join(root, f) not in before]
        sessions = [f for f in written if f.endswith(".jsonl") and "/.claude/projects/" in f]
        if p.returncode != 0 or not sessions:
            lines = (p.stderr + p.stdout).strip().splitlines()
            why = next((l for l in lines if "rollback" in l.lower() or "error" in l.lower()), lines[-1] if lines else "")
            return [name, f"refused (exit {p.returncode}): {why.strip()[:90]}", "–", "–", "–", "–", "–"]
        path = max(sessions, key=os.path.getsize)
        text, rollback, tools, ids = inspect(path, src)
        if cut:
            rollback = "– (no rollback in its input)"
        others = [f for f in written if f != path and SECRET in open(f, errors="replace").read()]
        if SECRET in text:
            secret = "**carried**"
        elif re.search(r"AWS_SECRET_ACCESS_KEY=\[REDACTED", text):
            secret = "replaced by a marker"
        else:
            secret = "absent (nor the line that held it)" if "AWS_SECRET_ACCESS_KEY" not in text else "gone"
        secret += (
            f" (+ {len(others)} other file{'s' * (len(others) > 1)}: "
            + ", ".join(f"`{os.path.basename(f)}` in `{os.path.relpath(os.path.dirname(f), home)}`" for f in others)
            + ")" if others else "")
        return [name, rollback, secret, tools, ids, validate(path), resume(path, home, proj, src, cut)]
    finally:
        shutil.rmtree(base, ignore_errors=True)


HEAD = ["converter", "(a) discarded turn", "(b) planted AWS key", "(c) tool calls", "(d) thinking, ids",
        "(e) `validate --strict`", "(e) resumes in the CLI"]
for src, title in (("codex", "Codex rollout"), ("gemini", "Gemini CLI session")):
    print(f"\n**{title}** (`tests/fixtures/import/{src}/`)\n")
    print("| " + " | ".join(HEAD) + " |")
    print("|" + "---|" * len(HEAD))
    for name, srcs, argv_of in CONVERTERS:
        if src in srcs:
            print("| " + " | ".join(one(name, src, argv_of)) + " |", flush=True)
PY
