//! What a server's `WWW-Authenticate` header asks for (RFC 6750 §3, read
//! with the auth-param grammar of RFC 9110 §11): the Bearer challenge's
//! `resource_metadata` (RFC 9728 §5.1), `scope` and `error`.
//!
//! Written here rather than taken from a crate: the HTTP crates mcp-chain
//! uses parse no challenges, and the grammar is a dozen lines. The header
//! is the server's, so it is read defensively: several challenges in one
//! header or several headers, quoted strings with escapes, tokens, and
//! whatever else is skipped; nothing is ever an error, only absent.

/// The Bearer challenge of a 401 or 403.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// Where the protected resource metadata is (RFC 9728).
    pub(crate) resource_metadata: Option<String>,
    /// The scopes the request needs, space-separated as sent.
    pub(crate) scope: Option<String>,
    /// `invalid_token`, `insufficient_scope`, …
    pub(crate) error: Option<String>,
}

impl Challenge {
    /// The Bearer challenge among `headers` (each one `WWW-Authenticate`
    /// value); `None` when no header names the Bearer scheme.
    pub(crate) fn bearer<'a>(headers: impl IntoIterator<Item = &'a str>) -> Option<Self> {
        headers.into_iter().find_map(bearer_in)
    }

    /// Whether the server says the token lacks scope (a step-up).
    pub(crate) fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }

    /// The scopes asked for, one by one.
    pub(crate) fn scopes(&self) -> Vec<String> {
        self.scope
            .as_deref()
            .map(|s| s.split_ascii_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }
}

/// Reads one header value: challenges separated by commas, each a scheme
/// then `name=value` pairs (also separated by commas).
fn bearer_in(header: &str) -> Option<Challenge> {
    let mut rest = header;
    let mut in_bearer = false;
    let mut found: Option<Challenge> = None;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return found;
        }
        let (word, after) = token(rest);
        if word.is_empty() {
            // Not a token: skip one character, never loop forever.
            rest = &rest[rest.chars().next().map_or(1, char::len_utf8)..];
            continue;
        }
        let after_ws = after.trim_start_matches([' ', '\t']);
        if let Some(value) = after_ws.strip_prefix('=') {
            // A parameter of the current challenge.
            let (value, next) = param_value(value.trim_start_matches([' ', '\t']));
            if in_bearer {
                let challenge = found.get_or_insert_with(Challenge::default);
                match word.to_ascii_lowercase().as_str() {
                    "resource_metadata" => challenge.resource_metadata = Some(value),
                    "scope" => challenge.scope = Some(value),
                    "error" => challenge.error = Some(value),
                    _ => {}
                }
            }
            rest = next;
        } else {
            // A new scheme. The first Bearer challenge counts.
            if found.is_some() && in_bearer {
                return found;
            }
            in_bearer = word.eq_ignore_ascii_case("bearer");
            if in_bearer {
                found = Some(Challenge::default());
            }
            rest = after;
        }
    }
}

/// A token (RFC 9110 tchar run) and what follows it.
fn token(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)))
        .unwrap_or(text.len());
    text.split_at(end)
}

/// A parameter's value: a quoted string (escapes undone) or a token; and
/// what follows it.
fn param_value(text: &str) -> (String, &str) {
    let Some(quoted) = text.strip_prefix('"') else {
        let (value, rest) = token(text);
        return (value.to_owned(), rest);
    };
    let mut value = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (value, &quoted[i + 1..]),
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    value.push(escaped);
                }
            }
            c => value.push(c),
        }
    }
    // Unterminated: what there was.
    (value, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_is_read_with_its_parameters() {
        let c = Challenge::bearer([
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read files:write""#,
        ])
        .expect("a bearer challenge");
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scopes(), ["files:read", "files:write"]);
        assert!(!c.insufficient_scope());
    }

    #[test]
    fn other_schemes_tokens_and_escapes_are_handled() {
        let c = Challenge::bearer([
            "Basic realm=\"x, Bearer scope=wrong\"",
            r#"Digest realm="a", nonce="b", BEARER error=insufficient_scope, scope="a\"b" , realm=x, Basic realm="y""#,
        ])
        .expect("bearer");
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("a\"b"));
        assert!(c.insufficient_scope());
        assert_eq!(Challenge::bearer(["Basic realm=\"Bearer\""]), None);
        assert_eq!(Challenge::bearer(["Bearer"]), Some(Challenge::default()));
    }

    #[test]
    fn hostile_headers_end_without_panic() {
        for header in [
            "",
            "=",
            "Bearer scope=\"unterminated",
            "Bearer ,,,, =,= \"\" é ü, scope=é",
            "Bearer \\",
            &"Bearer a=b, ".repeat(10_000),
        ] {
            let _ = Challenge::bearer([header]);
        }
    }
}
