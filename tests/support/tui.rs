//! The pinned CLI interactive, in a tmux pseudo-terminal: what a user's terminal session is
//! (one process for the whole session, the status line drawn), for the tests that need it.

use std::process::{Command, Output};

use serde_json::json;

use super::claude::{claude_bin, Sandbox};
use super::mock_api::MockApi;

/// The key `Sandbox` gives the CLI; an interactive start asks about a custom key unless its
/// last 20 characters are approved in `.claude.json`.
pub const KEY: &str = "sk-ant-dummy";

/// One interactive CLI in its own tmux server; killed when dropped.
pub struct Tui {
    name: String,
}

impl Sandbox {
    /// Starts the CLI interactive against `mock` with `args`, in a 150×40 tmux terminal,
    /// asking nothing (onboarding done, the key approved, the folder trusted). `None` without
    /// the CLI; without tmux, skips (fails under `CI=true`).
    pub fn tui(&self, mock: &MockApi, args: &[&str]) -> Option<Tui> {
        let bin = claude_bin()?;
        if Command::new("tmux").arg("-V").output().is_err() {
            crate::common::skip_or_fail("tmux is not installed");
            return None;
        }
        let global = self.config_dir().join(".claude.json");
        let mut g: serde_json::Value = std::fs::read(&global)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_else(|| json!({}));
        g["hasCompletedOnboarding"] = json!(true);
        g["theme"] = json!("dark");
        g["customApiKeyResponses"] = json!({"approved": [KEY], "rejected": []});
        let proj = self.proj().to_string_lossy().into_owned();
        g["projects"][&proj]["hasTrustDialogAccepted"] = json!(true);
        std::fs::write(&global, g.to_string()).unwrap();
        let q = |s: &str| shlex::try_quote(s).unwrap().into_owned();
        let rest: Vec<String> = args.iter().map(|a| q(a)).collect();
        let line = format!(
            "cd {} && exec env -i PATH={} HOME={} CLAUDE_CONFIG_DIR={} TERM=xterm-256color ANTHROPIC_API_KEY={KEY} ANTHROPIC_BASE_URL={} DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 {} {}",
            q(&proj),
            q(&std::env::var("PATH").unwrap_or_default()),
            q(&self.root().join("home").to_string_lossy()),
            q(&self.config_dir().to_string_lossy()),
            mock.base_url(),
            q(&bin.to_string_lossy()),
            rest.join(" "),
        );
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let tui = Tui {
            name: format!(
                "cchist-tui-{}-{}",
                std::process::id(),
                N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ),
        };
        let started = tui.tmux(&[
            "new-session",
            "-d",
            "-s",
            &tui.name,
            "-x",
            "150",
            "-y",
            "40",
            &line,
        ]);
        assert!(started.status.success(), "{started:?}");
        Some(tui)
    }
}

impl Tui {
    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.name])
            .args(args)
            .output()
            .expect("run tmux")
    }

    /// What the terminal shows now.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", &self.name]).stdout)
            .into_owned()
    }

    /// Types `text` and presses Enter.
    pub fn say(&self, text: &str) {
        self.tmux(&["send-keys", "-t", &self.name, "-l", text]);
        std::thread::sleep(std::time::Duration::from_millis(400));
        self.tmux(&["send-keys", "-t", &self.name, "Enter"]);
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}
