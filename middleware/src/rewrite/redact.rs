//! Redaction: regex replacement over the text that comes back from the
//! server (and, when configured, the arguments that go to it), with named
//! built-in patterns for the secrets that leak most and for personal data
//! (`presets.rs`: each match checked, a checksum or a numbering rule,
//! before it is taken). A rule may spare the tools a user names
//! (`except_tools`: a billing tool's card numbers are its business).

use super::presets::{Check, CHECKED};
use crate::pattern::Pattern;
use regex::{Captures, Regex};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The replacement when a rule names none.
pub(super) const DEFAULT_REPLACEMENT: &str = "[REDACTED]";

/// Built-in patterns, used as `pattern = "@name"`. Each is a plain regex and
/// is documented in docs/layers/rewrite.md.
pub(super) const BUILTINS: &[(&str, &str)] = &[
    // AWS access key ids: long-term (AKIA), temporary (ASIA) and the rarer
    // prefixes AWS documents for other credential types.
    (
        "@aws_access_key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    ),
    // An AWS secret access key where it is named, as in a credentials
    // file or an env dump: the 40 characters after the key's name.
    (
        "@aws_secret_key",
        r#"(?i)\baws_secret_access_key\b["']?\s*[=:]\s*["']?[A-Za-z0-9/+=]{40}"#,
    ),
    // GitHub tokens: classic (ghp_, gho_, ghu_, ghs_, ghr_) and fine-grained.
    (
        "@github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
    ),
    // Slack bot, user, app and config tokens.
    ("@slack_token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}"),
    // An HTTP bearer credential, keyword included.
    ("@bearer_token", r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]+=*"),
    // A PEM private key block, whatever the algorithm, across lines.
    (
        "@private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)-----END[A-Z0-9 ]*PRIVATE KEY-----",
    ),
    // A JSON Web Token: three base64url parts, the first two JSON objects.
    (
        "@jwt",
        r"\beyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+",
    ),
];

/// One compiled rule.
#[derive(Debug, Clone)]
struct Rule {
    regex: Regex,
    replacement: String,
    /// A match is redacted only when it passes (a preset's checksum).
    check: Option<Check>,
    /// Tools whose calls this rule leaves alone.
    except: Vec<Pattern>,
}

/// A `redact` pattern that cannot be used (the operator's own text).
#[derive(Debug, thiserror::Error)]
pub(super) enum BadPattern {
    #[error("unknown built-in pattern {0:?}; known: {known}", known = builtin_names())]
    UnknownBuiltin(String),
    #[error("bad regex {0:?}: {1}")]
    Regex(String, regex::Error),
    #[error("{0:?} matches the empty string")]
    MatchesEmpty(String),
}

fn builtin_names() -> String {
    let known: Vec<&str> = BUILTINS
        .iter()
        .map(|(n, _)| *n)
        .chain(CHECKED.iter().map(|(n, _, _)| *n))
        .collect();
    known.join(", ")
}

/// The rules, applied in order.
#[derive(Debug, Clone, Default)]
pub(super) struct Redactor {
    rules: Vec<Rule>,
}

// === impl Redactor ===

impl Redactor {
    /// Adds a rule. `pattern` is a regex, or `@name` for a built-in one;
    /// `except`: the tools it spares.
    pub(super) fn push(
        &mut self,
        pattern: &str,
        replacement: Option<&str>,
        except: Vec<Pattern>,
    ) -> Result<(), BadPattern> {
        let (source, check) = match pattern.strip_prefix('@') {
            Some(_) => {
                let plain = BUILTINS.iter().find(|(name, _)| *name == pattern);
                let checked = CHECKED.iter().find(|(name, _, _)| *name == pattern);
                match (plain, checked) {
                    (Some((_, re)), _) => (*re, None),
                    (None, Some((_, re, check))) => (*re, Some(*check)),
                    (None, None) => return Err(BadPattern::UnknownBuiltin(pattern.to_owned())),
                }
            }
            None => (pattern, None),
        };
        let regex = Regex::new(source).map_err(|e| BadPattern::Regex(pattern.to_owned(), e))?;
        if regex.is_match("") {
            return Err(BadPattern::MatchesEmpty(pattern.to_owned()));
        }
        self.rules.push(Rule {
            regex,
            replacement: replacement.unwrap_or(DEFAULT_REPLACEMENT).to_owned(),
            check,
            except,
        });
        Ok(())
    }

    /// Whether some rule spares some tools.
    pub(super) fn spares_some(&self) -> bool {
        self.rules.iter().any(|r| !r.except.is_empty())
    }

    /// The rules for a call of `tool` (as the client or the server names
    /// it), when some rule spares it; `None`: every rule applies.
    pub(super) fn for_tool(&self, names: &[&str]) -> Option<Redactor> {
        let spared = |rule: &Rule| {
            rule.except
                .iter()
                .any(|p| names.iter().any(|name| p.is_match(name)))
        };
        if !self.rules.iter().any(spared) {
            return None;
        }
        let rules = self.rules.iter().filter(|r| !spared(r)).cloned().collect();
        Some(Redactor { rules })
    }

    pub(super) fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Applies every rule to `text`; borrowed when nothing matched, so
    /// clean text costs no copy.
    pub(super) fn apply<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for rule in &self.rules {
            if let Some(check) = rule.check {
                if let Some(checked) = checked(rule, check, &out) {
                    out = Cow::Owned(checked);
                }
                continue;
            }
            if let Cow::Owned(s) = rule.regex.replace_all(&out, rule.replacement.as_str()) {
                // Counted only where something matched: a second pass
                // over text that held a secret, none over clean text.
                tally::add(rule.regex.find_iter(&out).count());
                out = Cow::Owned(s);
            }
        }
        out
    }

    /// Redacts a string value in place. True when it changed.
    pub(super) fn string(&self, value: &mut String) -> bool {
        match self.apply(value) {
            Cow::Owned(s) => {
                *value = s;
                true
            }
            Cow::Borrowed(_) => false,
        }
    }

    /// Redacts every string in `value`, at any depth, object keys too (a
    /// map keyed by access key id is a real shape). True when one changed.
    pub(super) fn all_strings(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) => self.string(s),
            Value::Array(items) => items.iter_mut().fold(false, |c, v| self.all_strings(v) | c),
            Value::Object(map) => {
                let values = map.values_mut().fold(false, |c, v| self.all_strings(v) | c);
                self.keys(map) | values
            }
            _ => false,
        }
    }

    /// Redacts the keys of `map`, keeping their order. Two keys redacted to
    /// the same text stay two entries (`[REDACTED]`, `[REDACTED] #2`): a
    /// redaction hides a secret, it does not drop a value.
    fn keys(&self, map: &mut Map<String, Value>) -> bool {
        if !map.keys().any(|k| matches!(self.apply(k), Cow::Owned(_))) {
            return false;
        }
        let old = std::mem::take(map);
        for (key, value) in old {
            let mut key = self.apply(&key).into_owned();
            if map.contains_key(&key) {
                let base = key.clone();
                let mut n = 2;
                while map.contains_key(&key) {
                    key = format!("{base} #{n}");
                    n += 1;
                }
            }
            map.insert(key, value);
        }
        true
    }

    /// Redacts the text a result carries: every string under a `"text"` key
    /// at any depth (tool `content`, embedded resources, `resources/read`
    /// `contents`, `prompts/get` messages, a task's inlined `result`, the
    /// messages of embedded sampling requests) and every string in
    /// `structuredContent`. Names, URIs, MIME types and `blob`s are left.
    /// True when a string changed.
    pub(super) fn content(&self, value: &mut Value) -> bool {
        match value {
            Value::Array(items) => items.iter_mut().fold(false, |c, v| self.content(v) | c),
            Value::Object(map) => map.iter_mut().fold(false, |changed, (k, v)| {
                let this = match (k.as_str(), v) {
                    ("structuredContent", v) => self.all_strings(v),
                    ("text", Value::String(s)) => self.string(s),
                    (_, v) => self.content(v),
                };
                this | changed
            }),
            _ => false,
        }
    }
}

/// `text` with the matches of `rule` that pass `check` replaced; `None`
/// when none does (so clean text, and a near miss, cost no copy).
fn checked(rule: &Rule, check: Check, text: &str) -> Option<String> {
    if !rule.regex.find_iter(text).any(|m| check(m.as_str())) {
        return None;
    }
    let mut n = 0;
    let replaced = rule.regex.replace_all(text, |caps: &Captures<'_>| {
        let whole = caps.get(0).map_or("", |m| m.as_str());
        if !check(whole) {
            return whole.to_owned();
        }
        n += 1;
        let mut out = String::new();
        caps.expand(&rule.replacement, &mut out);
        out
    });
    tally::add(n);
    Some(replaced.into_owned())
}

/// How many redactions an edit made, for the layer's decision event (a
/// count, never the text). An edit is synchronous, so a count kept by the
/// thread for the length of [`tally::counted`] is the edit's alone.
pub(super) mod tally {
    use std::cell::Cell;

    thread_local! {
        static COUNT: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn add(n: usize) {
        COUNT.with(|c| c.set(c.get() + n));
    }

    /// Runs `edit`; what it returned, and how many redactions it made.
    pub(in crate::rewrite) fn counted<T>(edit: impl FnOnce() -> T) -> (T, usize) {
        let before = COUNT.with(Cell::get);
        let out = edit();
        let after = COUNT.with(|c| c.replace(before));
        (out, after - before)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn builtin(name: &str) -> Redactor {
        let mut r = Redactor::default();
        r.push(name, None, Vec::new()).expect(name);
        r
    }

    #[test]
    fn builtins_catch_their_secrets() {
        let cases = [
            (
                "@aws_access_key",
                "key=AKIAIOSFODNN7EXAMPLE;",
                "key=[REDACTED];",
            ),
            (
                "@aws_secret_key",
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
                "[REDACTED]\n",
            ),
            (
                "@github_token",
                "t ghp_0123456789abcdefghijABCDEFGHIJ012345 end",
                "t [REDACTED] end",
            ),
            (
                "@slack_token",
                "xoxb-1234567890-abcdefABCDEF x",
                "[REDACTED] x",
            ),
            (
                "@bearer_token",
                "Authorization: Bearer abc.DEF-123~_+/== next",
                "Authorization: [REDACTED] next",
            ),
            (
                "@private_key",
                "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nxyz\n-----END RSA PRIVATE KEY-----\nb",
                "a\n[REDACTED]\nb",
            ),
            ("@jwt", "eyJhbGciOi.eyJzdWIiOi.sig_-x", "[REDACTED]"),
        ];
        for (name, input, expected) in cases {
            assert_eq!(builtin(name).apply(input), expected, "{name}");
        }
    }

    #[test]
    fn clean_text_is_borrowed_and_unknown_builtins_are_errors() {
        let r = builtin("@aws_access_key");
        assert!(matches!(r.apply("nothing here"), Cow::Borrowed(_)));
        let err = Redactor::default()
            .push("@nope", None, Vec::new())
            .expect_err("unknown");
        assert!(err.to_string().contains("@aws_access_key"), "{err}");
        let empty = Redactor::default()
            .push("a*", None, Vec::new())
            .expect_err("matches nothing");
        assert_eq!(empty.to_string(), "\"a*\" matches the empty string");
    }

    #[test]
    fn content_redacts_text_and_structured_content_keys_too() {
        let mut r = Redactor::default();
        r.push("s3cr3t", Some("***"), Vec::new()).expect("valid");
        let mut v = json!({"content": [
            {"type": "text", "text": "pw s3cr3t"},
            {"type": "resource", "resource": {"uri": "x://s3cr3t", "text": "s3cr3t"}},
        ], "structuredContent": {"a": ["s3cr3t", 1], "s3cr3t": "k"}, "isError": false});
        r.content(&mut v);
        assert_eq!(
            v,
            json!({"content": [
                {"type": "text", "text": "pw ***"},
                {"type": "resource", "resource": {"uri": "x://s3cr3t", "text": "***"}},
            ], "structuredContent": {"a": ["***", 1], "***": "k"}, "isError": false})
        );
    }

    #[test]
    fn keys_are_redacted_and_two_never_become_one() {
        let r = builtin("@aws_access_key");
        let mut v = json!({"keys": {
            "AKIAIOSFODNN7EXAMPLE": {"user": "a"},
            "AKIAIOSFODNN7EXAMPL2": {"user": "b"},
            "plain": 1,
        }});
        assert!(r.all_strings(&mut v));
        assert_eq!(
            v,
            json!({"keys": {"[REDACTED]": {"user": "a"}, "[REDACTED] #2": {"user": "b"}, "plain": 1}})
        );
    }

    #[test]
    fn replacement_may_use_groups() {
        let mut r = Redactor::default();
        r.push(r"(user=)\w+", Some("${1}[X]"), Vec::new())
            .expect("valid");
        assert_eq!(r.apply("user=bob ok"), "user=[X] ok");
    }
}
