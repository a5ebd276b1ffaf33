//! Reload at any point: seeded schedules interleave pipelined calls (quick
//! and slow) with rewrites of the config and SIGHUPs, at whatever moment
//! the schedule picks. Whatever the moment: every request is answered
//! exactly once, nothing is answered that was not asked, mcp-chain drains
//! and exits cleanly at the end, and once a reload is known to be applied
//! the next call follows the policy it names (a tool denied or allowed, an
//! answer redacted or not).

mod support;

use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use support::{call, eventually, Proxy, TempDir, FAKE};

/// A small deterministic generator (xorshift64): the same seed, the same
/// schedule, so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One policy the schedule can reload into.
#[derive(Clone, Copy, Debug)]
struct Variant {
    deny_echo: bool,
    deny_delay: bool,
    redact: bool,
}

impl Variant {
    fn pick(rng: &mut Rng) -> Self {
        let bits = rng.below(8);
        Self {
            deny_echo: bits & 1 != 0,
            deny_delay: bits & 2 != 0,
            redact: bits & 4 != 0,
        }
    }

    fn config(&self, audit: &str) -> String {
        let mut deny = Vec::new();
        if self.deny_echo {
            deny.push("\"echo\"");
        }
        if self.deny_delay {
            deny.push("\"delay\"");
        }
        let mut text = format!(
            "[upstream]\ncommand = {FAKE:?}\n\n[[middleware]]\ntype = \"audit\"\npath = {audit:?}\n\n\
             [[middleware]]\ntype = \"filter\"\ntools = {{ deny = [{}] }}\n",
            deny.join(", ")
        );
        if self.redact {
            text += "\n[[middleware]]\ntype = \"rewrite\"\n[[middleware.redact]]\npattern = \"s3cr3t\"\n";
        }
        text
    }
}

/// How many reloads the audit says were applied.
fn applied(audit: &std::path::Path) -> usize {
    std::fs::read_to_string(audit)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"event\":\"config_reload\"") && l.contains("\"applied\""))
        .count()
}

/// Reloads `variant` and waits until a reload that began after the file
/// was written is applied (a reload already running when it was written
/// may be the first to finish, so a second hangup makes sure).
async fn settle(proxy: &Proxy, dir: &TempDir, variant: Variant, audit: &std::path::Path) {
    dir.write("c.toml", &variant.config(&audit.display().to_string()));
    for _ in 0..2 {
        let before = applied(audit);
        proxy.signal("HUP");
        eventually("the reload to be applied", || applied(audit) > before).await;
    }
}

/// What a settled call must get under `variant`.
fn check_settled(variant: Variant, tool: &str, answer: &Value) {
    let denied = match tool {
        "echo" => variant.deny_echo,
        _ => variant.deny_delay,
    };
    if denied {
        assert_eq!(answer["error"]["code"], -32602, "{variant:?}: {answer}");
        return;
    }
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{variant:?}: {answer}"));
    if tool == "echo" {
        assert_eq!(
            !text.contains("s3cr3t"),
            variant.redact,
            "{variant:?}: {text}"
        );
    }
}

/// Counts an answer (a message with an id: notifications have none).
fn note(message: &Value, answers: &mut HashMap<u64, usize>) {
    if let Some(id) = message["id"].as_u64() {
        *answers.entry(id).or_default() += 1;
    }
}

async fn run(seed: u64) {
    let mut rng = Rng(seed);
    let dir = TempDir::new("reload-any-point");
    let audit = dir.path("audit.jsonl");
    let mut variant = Variant::pick(&mut rng);
    let config = dir.write("c.toml", &variant.config(&audit.display().to_string()));
    let mut proxy = Proxy::spawn(&["--config", &config]);
    proxy.initialize("2025-11-25").await;

    let mut asked: HashSet<u64> = HashSet::new();
    let mut answers: HashMap<u64, usize> = HashMap::new();
    let mut id = 100;
    for _ in 0..80 {
        id += 1;
        match rng.below(10) {
            // A call sent and not waited for: quick, or slow enough to be
            // in flight across the reloads that follow.
            0..=5 => {
                let message = match rng.below(2) {
                    0 => call(json!(id), "echo", json!({"text": "s3cr3t"})),
                    _ => call(json!(id), "delay", json!({"ms": rng.below(40)})),
                };
                proxy.send(message).await;
                asked.insert(id);
            }
            // A reload at this very point, not waited for.
            6..=7 => {
                variant = Variant::pick(&mut rng);
                dir.write("c.toml", &variant.config(&audit.display().to_string()));
                proxy.signal("HUP");
            }
            // A reload waited for, then a call that must follow it.
            _ => {
                variant = Variant::pick(&mut rng);
                settle(&proxy, &dir, variant, &audit).await;
                let tool = ["echo", "delay"][rng.below(2) as usize];
                let arguments = json!({"text": "s3cr3t", "ms": 1});
                proxy.send(call(json!(id), tool, arguments)).await;
                asked.insert(id);
                let (answer, before) = proxy.recv_answer(&json!(id)).await;
                for earlier in &before {
                    note(earlier, &mut answers);
                }
                note(&answer, &mut answers);
                check_settled(variant, tool, &answer);
            }
        }
    }
    let (status, rest) = proxy.finish().await;
    assert!(status.success(), "seed {seed}: {}", proxy.stderr());
    for message in &rest {
        note(message, &mut answers);
    }
    let answered: HashSet<u64> = answers.keys().copied().collect();
    assert_eq!(
        answered, asked,
        "seed {seed}: every request answered, nothing else"
    );
    let twice: Vec<_> = answers.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "seed {seed}: answered more than once: {twice:?}"
    );
}

#[tokio::test]
async fn a_reload_at_any_point_loses_nothing_and_answers_once() {
    let seeds = [
        0x9e37_79b9_7f4a_7c15,
        0x2545_f491_4f6c_dd1d,
        0xdead_beef_cafe_f00d,
        0x0123_4567_89ab_cdef,
        0x5851_f42d_4c95_7f2d,
        0x1405_7b7e_f767_814f,
        7,
        42,
    ];
    for seed in seeds {
        run(seed).await;
    }
}
