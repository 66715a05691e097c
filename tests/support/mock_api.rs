//! A loopback stand-in for the Anthropic Messages API, for driving the real Claude Code CLI.
//!
//! Rust port of `shared/tools/cc-oracle/mock_api.py`, plus request-shape checks the real API
//! performs (tool_use / tool_result pairing). It runs inside the test process: a `TcpListener` on
//! `127.0.0.1:0`, one thread per connection, HTTP/1.1 keep-alive, `Content-Length` or chunked
//! request bodies. Every request is recorded.
//!
//! - `GET *` → `{}`; `POST *count_tokens*` → `{"input_tokens":100}`.
//! - `POST */messages*` with a well-formed conversation → an assistant message, as SSE when the
//!   body says `"stream": true`, as plain JSON otherwise. Requests carrying a non-empty `tools`
//!   array get the next scripted turn (or `Done.` when the script is used up); others get a short
//!   text (`Session notes.`).
//! - A malformed conversation (see [`check_shape`]) → HTTP 400 with the API's error JSON; the
//!   message is recorded in [`MockApi::shape_errors`].

use serde_json::{json, Value};
use std::collections::{HashSet, VecDeque};
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One content block of a scripted assistant turn.
#[derive(Clone, Debug)]
pub enum Block {
    /// A `text` block.
    Text(String),
    /// A `thinking` block; the mock adds a unique `signature`.
    Thinking(String),
    /// A `tool_use` block; the mock adds a unique `toolu_…` id.
    Tool {
        /// Tool name, e.g. `Bash`.
        name: String,
        /// Tool input object.
        input: Value,
    },
}

impl Block {
    /// Shorthand for [`Block::Text`].
    pub fn text(s: &str) -> Self {
        Block::Text(s.to_owned())
    }

    /// Shorthand for [`Block::Thinking`].
    pub fn thinking(s: &str) -> Self {
        Block::Thinking(s.to_owned())
    }

    /// Shorthand for [`Block::Tool`].
    pub fn tool(name: &str, input: Value) -> Self {
        Block::Tool {
            name: name.to_owned(),
            input,
        }
    }

    /// Parses the cc-oracle scenario form: `{"text": s} | {"thinking": s} | {"tool": n, "input": {…}}`.
    pub fn from_oracle_json(v: &Value) -> Option<Self> {
        if let Some(name) = v.get("tool").and_then(Value::as_str) {
            return Some(Block::tool(name, v.get("input")?.clone()));
        }
        if let Some(t) = v.get("thinking").and_then(Value::as_str) {
            return Some(Block::thinking(t));
        }
        v.get("text").and_then(Value::as_str).map(Block::text)
    }
}

/// A scripted assistant turn: the content of one API response.
pub type Turn = Vec<Block>;

/// One HTTP request the mock received.
#[derive(Clone, Debug)]
pub struct Request {
    /// HTTP method.
    pub method: String,
    /// Request target, e.g. `/v1/messages?beta=true`.
    pub path: String,
    /// Parsed JSON body (`null` when empty or not JSON).
    pub body: Value,
}

impl Request {
    /// True for a main-loop Messages request: one that carries a non-empty `tools` array.
    pub fn carries_tools(&self) -> bool {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty())
    }
}

#[derive(Default)]
struct State {
    turns: VecDeque<Turn>,
    /// Usage objects for the next main-loop responses, in order (then the default).
    usages: VecDeque<Value>,
    requests: Vec<Request>,
    shape_errors: Vec<String>,
    /// What side requests (no tools: titles, compaction summaries) are answered; default
    /// `Session notes.`.
    side_text: Option<String>,
}

struct Shared {
    state: Mutex<State>,
    /// Unique per mock, so ids stay unique across the prompts and resumes of one session.
    run: String,
    next_id: AtomicU64,
    stop: AtomicBool,
}

/// The running mock server. Stops accepting connections when dropped.
pub struct MockApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl MockApi {
    /// Starts a mock on a free loopback port that serves `turns` in order.
    pub fn start(turns: Vec<Turn>) -> io::Result<Self> {
        static MOCKS: AtomicU64 = AtomicU64::new(0);
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let seed = (u64::from(std::process::id()) << 32)
            ^ u64::from(nanos)
            ^ MOCKS
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0x9E37_79B9);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                turns: turns.into(),
                ..State::default()
            }),
            run: format!("{:08x}", (seed ^ (seed >> 32)) as u32),
            next_id: AtomicU64::new(1),
            stop: AtomicBool::new(false),
        });
        let sh = Arc::clone(&shared);
        let acceptor = thread::spawn(move || {
            for conn in listener.incoming() {
                if sh.stop.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = conn {
                    let sh = Arc::clone(&sh);
                    thread::spawn(move || {
                        let _ = serve_connection(stream, &sh);
                    });
                }
            }
        });
        Ok(MockApi {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Replaces the turns still to be served (used between the prompts of a scenario).
    pub fn set_script(&self, turns: Vec<Turn>) {
        self.shared.lock().turns = turns.into();
    }

    /// The `usage` the next main-loop responses report, one each in order (after them, the
    /// default `{"input_tokens": 1200, "output_tokens": 1}`): how a test makes the CLI believe
    /// its context holds a chosen number of tokens.
    pub fn set_usage(&self, usages: Vec<Value>) {
        self.shared.lock().usages = usages.into();
    }

    /// Answer side requests (no tools: the compaction summary among them) with `text`.
    pub fn set_side_text(&self, text: &str) {
        self.shared.lock().side_text = Some(text.to_owned());
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.lock().requests.clone()
    }

    /// The error messages of every request rejected by [`check_shape`].
    pub fn shape_errors(&self) -> Vec<String> {
        self.shared.lock().shape_errors.clone()
    }

    /// `messages` of the first request carrying `tools`: the conversation the CLI rebuilt.
    pub fn conversation(&self) -> Option<Vec<Value>> {
        let st = self.shared.lock();
        let req = st.requests.iter().find(|r| r.carries_tools())?;
        req.body.get("messages")?.as_array().cloned()
    }
}

impl Drop for MockApi {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the acceptor so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not hide the requests from the others.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Answers one request: (status, content type, body).
    fn handle(&self, method: &str, path: &str, body: &[u8]) -> (u16, &'static str, Vec<u8>) {
        let req: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let mut st = self.lock();
        st.requests.push(Request {
            method: method.to_owned(),
            path: path.to_owned(),
            body: req.clone(),
        });
        if method != "POST" {
            return (200, "application/json", b"{}".to_vec());
        }
        if path.contains("count_tokens") {
            return (200, "application/json", br#"{"input_tokens":100}"#.to_vec());
        }
        if !path.contains("/messages") {
            return (200, "application/json", b"{}".to_vec());
        }
        let messages = req
            .get("messages")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        if let Err(message) = check_shape(messages) {
            st.shape_errors.push(message.clone());
            let err = json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}});
            return (400, "application/json", err.to_string().into_bytes());
        }
        let main_loop = req
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty());
        let (turn, usage) = if main_loop {
            let turn = st
                .turns
                .pop_front()
                .unwrap_or_else(|| vec![Block::text("Done.")]);
            (turn, st.usages.pop_front())
        } else {
            let text = st.side_text.as_deref().unwrap_or("Session notes.");
            (vec![Block::text(text)], None)
        };
        drop(st);
        let content: Vec<Value> = turn.iter().map(|b| self.render(b)).collect();
        let model = req
            .get("model")
            .cloned()
            .unwrap_or_else(|| json!("claude-sonnet-4-5"));
        let streaming = req.get("stream").and_then(Value::as_bool) == Some(true);
        let msg = self.respond(&content, model, streaming, usage);
        if streaming {
            (200, "text/event-stream", msg.into_bytes())
        } else {
            (200, "application/json", msg.into_bytes())
        }
    }

    fn render(&self, b: &Block) -> Value {
        match b {
            Block::Text(t) => json!({"type": "text", "text": t}),
            Block::Thinking(t) => json!({"type": "thinking", "thinking": t,
                "signature": format!("sig{}{:04}", self.run, self.id())}),
            Block::Tool { name, input } => json!({"type": "tool_use",
                "id": format!("toolu_{}{:04}", self.run, self.id()), "name": name, "input": input}),
        }
    }

    /// The response body: a JSON message, or the SSE event stream of the same message.
    fn respond(
        &self,
        content: &[Value],
        model: Value,
        streaming: bool,
        usage: Option<Value>,
    ) -> String {
        let stop = if content.iter().any(|c| c["type"] == "tool_use") {
            "tool_use"
        } else {
            "end_turn"
        };
        let mut msg = json!({"id": format!("msg_{}{:06}", self.run, self.id()), "type": "message",
            "role": "assistant", "model": model, "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 1200, "output_tokens": 1}});
        // The final output count comes in message_delta; a chosen usage repeats its own there.
        let delta_usage = match &usage {
            Some(u) => {
                json!({"output_tokens": u.get("output_tokens").cloned().unwrap_or(json!(0))})
            }
            None => json!({"output_tokens": 40}),
        };
        if let Some(u) = usage {
            msg["usage"] = u;
        }
        if !streaming {
            msg["content"] = Value::Array(content.to_vec());
            msg["stop_reason"] = json!(stop);
            return msg.to_string();
        }
        let mut out = String::new();
        let mut ev = |kind: &str, mut data: Value| {
            data.as_object_mut()
                .expect("event data is an object")
                .insert("type".into(), json!(kind));
            out.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
        };
        ev("message_start", json!({"message": msg}));
        for (k, c) in content.iter().enumerate() {
            match c["type"].as_str() {
                Some("text") => {
                    ev(
                        "content_block_start",
                        json!({"index": k, "content_block": {"type": "text", "text": ""}}),
                    );
                    ev(
                        "content_block_delta",
                        json!({"index": k, "delta": {"type": "text_delta", "text": c["text"]}}),
                    );
                }
                Some("thinking") => {
                    ev(
                        "content_block_start",
                        json!({"index": k, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
                    );
                    ev(
                        "content_block_delta",
                        json!({"index": k, "delta": {"type": "thinking_delta", "thinking": c["thinking"]}}),
                    );
                    ev(
                        "content_block_delta",
                        json!({"index": k, "delta": {"type": "signature_delta", "signature": c["signature"]}}),
                    );
                }
                _ => {
                    ev(
                        "content_block_start",
                        json!({"index": k, "content_block": {"type": "tool_use", "id": c["id"], "name": c["name"], "input": {}}}),
                    );
                    ev(
                        "content_block_delta",
                        json!({"index": k, "delta": {"type": "input_json_delta", "partial_json": c["input"].to_string()}}),
                    );
                }
            }
            ev("content_block_stop", json!({"index": k}));
        }
        ev(
            "message_delta",
            json!({"delta": {"stop_reason": stop, "stop_sequence": null}, "usage": delta_usage}),
        );
        ev("message_stop", json!({}));
        out
    }
}

/// Serves requests on one keep-alive connection until the client closes it.
fn serve_connection(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(300)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    while let Some(req) = read_request(&mut reader, &mut out)? {
        let (status, ctype, body) = shared.handle(&req.method, &req.path, &req.body);
        let reason = if status == 200 { "OK" } else { "Bad Request" };
        let head = format!(
            "HTTP/1.1 {status} {reason}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nrequest-id: req_mock\r\n\r\n",
            body.len()
        );
        out.write_all(head.as_bytes())?;
        out.write_all(&body)?;
        out.flush()?;
        if req.close {
            break;
        }
    }
    Ok(())
}

struct RawRequest {
    method: String,
    path: String,
    body: Vec<u8>,
    close: bool,
}

/// Reads one request; `None` at a clean end of stream.
fn read_request(r: &mut impl BufRead, w: &mut impl Write) -> io::Result<Option<RawRequest>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let (mut length, mut chunked, mut close, mut expect) = (0usize, false, false, false);
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 || h.trim_end().is_empty() {
            break;
        }
        let (name, value) = h.split_once(':').unwrap_or((&h, ""));
        let value = value.trim().to_ascii_lowercase();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse().unwrap_or(0),
            "transfer-encoding" => chunked = value.contains("chunked"),
            "connection" => close = value == "close",
            "expect" => expect = value == "100-continue",
            _ => {}
        }
    }
    if expect {
        w.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        w.flush()?;
    }
    let body = if chunked {
        read_chunked(r)?
    } else {
        let mut b = vec![0; length];
        r.read_exact(&mut b)?;
        b
    };
    Ok(Some(RawRequest {
        method,
        path,
        body,
        close,
    }))
}

/// Decodes a `Transfer-Encoding: chunked` body (trailers are read and ignored).
fn read_chunked(r: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        r.read_line(&mut size)?;
        let hex = size.split(';').next().unwrap_or("").trim();
        let n = usize::from_str_radix(hex, 16)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
        if n == 0 {
            loop {
                let mut t = String::new();
                if r.read_line(&mut t)? == 0 || t.trim_end().is_empty() {
                    return Ok(body);
                }
            }
        }
        let start = body.len();
        body.resize(start + n, 0);
        r.read_exact(&mut body[start..])?;
        let mut crlf = String::new();
        r.read_line(&mut crlf)?;
    }
}

/// Checks a `messages` array the way the Messages API does; `Err` holds the API's error message.
///
/// `system`-role messages (which Claude Code 2.1.328 interleaves for context) are transparent;
/// consecutive messages of one role are merged first, as the API does. Then every `tool_use` in an
/// assistant message must be answered by a `tool_result` in the next (user) message, every
/// `tool_result` must answer a `tool_use` of the previous (assistant) message, and `tool_use` ids
/// must be unique.
pub fn check_shape(messages: &[Value]) -> Result<(), String> {
    struct Group<'a> {
        role: &'a str,
        first: usize,
        blocks: Vec<(usize, usize, &'a Value)>,
    }
    let mut groups: Vec<Group> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        match role {
            "system" => continue,
            "user" | "assistant" => {}
            _ => {
                return Err(format!(
                    "messages.{i}.role: Input should be 'user' or 'assistant'"
                ))
            }
        }
        if groups.last().map(|g| g.role) != Some(role) {
            groups.push(Group {
                role,
                first: i,
                blocks: Vec::new(),
            });
        }
        let g = groups.last_mut().expect("just pushed");
        if let Some(blocks) = m.get("content").and_then(Value::as_array) {
            g.blocks
                .extend(blocks.iter().enumerate().map(|(j, b)| (i, j, b)));
        }
    }
    let ids = |g: &Group, kind: &str, key: &str| -> Vec<(usize, usize, String)> {
        g.blocks
            .iter()
            .filter(|(_, _, b)| b.get("type").and_then(Value::as_str) == Some(kind))
            .map(|&(i, j, b)| {
                (
                    i,
                    j,
                    b.get(key).and_then(Value::as_str).unwrap_or("").to_owned(),
                )
            })
            .collect()
    };
    let mut seen = HashSet::new();
    for (k, g) in groups.iter().enumerate() {
        if g.role == "assistant" {
            let uses = ids(g, "tool_use", "id");
            for (i, j, id) in &uses {
                if !seen.insert(id.clone()) {
                    return Err(format!(
                        "messages.{i}.content.{j}: `tool_use` ids must be unique"
                    ));
                }
            }
            let answered: HashSet<String> = groups
                .get(k + 1)
                .map(|n| ids(n, "tool_result", "tool_use_id"))
                .unwrap_or_default()
                .into_iter()
                .map(|(_, _, id)| id)
                .collect();
            let missing: Vec<&str> = uses
                .iter()
                .map(|(_, _, id)| id.as_str())
                .filter(|id| !answered.contains(*id))
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "messages.{}: tool_use ids were found without tool_result blocks immediately after: {}. \
                     Each tool_use block must have a corresponding tool_result block in the next message.",
                    g.first,
                    missing.join(", ")
                ));
            }
        } else {
            let asked: HashSet<String> = match k.checked_sub(1).map(|p| &groups[p]) {
                Some(p) => ids(p, "tool_use", "id")
                    .into_iter()
                    .map(|(_, _, id)| id)
                    .collect(),
                None => HashSet::new(),
            };
            if let Some((i, j, id)) = ids(g, "tool_result", "tool_use_id")
                .into_iter()
                .find(|(_, _, id)| !asked.contains(id))
            {
                return Err(format!(
                    "messages.{i}.content.{j}: unexpected tool_use_id found in tool_result blocks: {id}. \
                     Each tool_result block must have a corresponding tool_use block in the previous message."
                ));
            }
        }
    }
    Ok(())
}
