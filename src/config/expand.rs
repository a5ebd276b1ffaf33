//! `${VAR}` expansion inside the TOML's double-quoted strings.
//!
//! Expansion happens on the text before parsing, so errors keep their line
//! and column, but only inside basic ("…") strings: a value is escaped for
//! such a string, so a variable holding `"` or `\` cannot change the TOML's
//! structure. `$${VAR}` writes a literal `${VAR}`; `${1}` (not a variable
//! name: a regex group in a replacement) is left as written. Comments and
//! literal strings ('…' and '''…''', whatever quotes they hold) are left
//! alone; multi-line basic strings ("""…""") are expanded like "…".

/// Where the scanner is in the TOML text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    Code,
    Comment,
    /// `"…"` and `"""…"""`: expanded.
    Basic {
        multiline: bool,
    },
    /// `'…'` and `'''…'''`: never expanded, whatever quotes they hold.
    Literal {
        multiline: bool,
    },
}

/// Expands `text`; an undefined variable is an error at its line and column.
pub(super) fn expand(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, Vec<(usize, String)>> {
    let mut out = String::with_capacity(text.len());
    let mut errors = Vec::new();
    let mut at = At::Code;
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        // How many bytes, from `i`, are copied as they are.
        let mut copy = rest.chars().next().map_or(1, char::len_utf8);
        match at {
            At::Code => {
                let triple = |q: &str| rest.starts_with(&q.repeat(3));
                (at, copy) = match rest.as_bytes()[0] {
                    b'#' => (At::Comment, 1),
                    b'"' if triple("\"") => (At::Basic { multiline: true }, 3),
                    b'"' => (At::Basic { multiline: false }, 1),
                    b'\'' if triple("'") => (At::Literal { multiline: true }, 3),
                    b'\'' => (At::Literal { multiline: false }, 1),
                    _ => (at, copy),
                };
            }
            At::Comment if rest.starts_with('\n') => at = At::Code,
            At::Comment => {}
            At::Literal { multiline } | At::Basic { multiline } => {
                let quote = if matches!(at, At::Basic { .. }) {
                    '"'
                } else {
                    '\''
                };
                let basic = quote == '"';
                if basic && rest.starts_with('\\') {
                    // An escape: the backslash and the whole next character.
                    copy = 1 + rest[1..].chars().next().map_or(0, char::len_utf8);
                } else if rest.starts_with(quote) {
                    let run = rest.chars().take_while(|c| *c == quote).count();
                    match (multiline, run) {
                        (false, _) => at = At::Code,
                        // A multi-line string ends at three quotes; up to
                        // two more before them are its own.
                        (true, 3..) => {
                            copy = run.min(5);
                            at = At::Code;
                        }
                        (true, _) => copy = run,
                    }
                } else if basic && rest.starts_with("$${") {
                    out.push_str("${");
                    i += 3;
                    continue;
                } else if basic && rest.starts_with("${") {
                    match rest[2..].find('}') {
                        // `${1}` (a regex group in a replacement) is not a
                        // variable name: left as written.
                        Some(len) if !is_var_name(&rest[2..2 + len]) => {}
                        Some(len) => {
                            let name = &rest[2..2 + len];
                            match lookup(name) {
                                Some(value) => push_escaped(&mut out, &value),
                                None => errors.push((
                                    i,
                                    format!("environment variable `{name}` is not set (write $${{{name}}} for a literal)"),
                                )),
                            }
                            i += len + 3;
                            continue;
                        }
                        None => errors.push((i, "`${` without a closing `}`".to_owned())),
                    }
                }
            }
        }
        let copy = copy.min(rest.len());
        out.push_str(&rest[..copy]);
        i += copy;
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// An environment variable name as shells accept it.
fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn push_escaped(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/me".into()),
            "TRICKY" => Some("a\"b\\c\nd".into()),
            _ => None,
        }
    }

    #[test]
    fn expands_inside_basic_strings_only() {
        let text = "# ${NOPE} in a comment\na = \"${HOME}/x\"\nb = '${NOPE}'\n";
        let out = expand(text, env).expect("expands");
        assert_eq!(
            out,
            "# ${NOPE} in a comment\na = \"/home/me/x\"\nb = '${NOPE}'\n"
        );
    }

    #[test]
    fn values_are_escaped_so_they_stay_strings() {
        let out = expand("a = \"${TRICKY}\"", env).expect("expands");
        let table: toml::Table = toml::from_str(&out).expect("still TOML");
        assert_eq!(table["a"].as_str(), Some("a\"b\\c\nd"));
    }

    #[test]
    fn undefined_variable_is_an_error_with_its_offset() {
        let err = expand("a = \"x${MISSING}\"", env).expect_err("undefined");
        assert_eq!(err[0].0, 6);
        assert!(err[0].1.contains("MISSING"));
    }

    #[test]
    fn regex_group_references_are_not_variables() {
        let text = "replacement = \"${1}[REDACTED]\"";
        assert_eq!(expand(text, env).expect("ok"), text);
    }

    #[test]
    fn literal_strings_are_never_expanded_whatever_quotes_they_hold() {
        for text in [
            "a = '''it's \"${NOPE}\"'''\n",
            "a = '''\nline 'one' \"${NOPE}\"\n'''\n",
            "a = '''x'''''\nb = '${NOPE}'\n",
            "a = '\"${NOPE}\"'\n",
        ] {
            assert_eq!(expand(text, env).expect(text), text);
            toml::from_str::<toml::Table>(text).expect(text);
        }
    }

    #[test]
    fn multiline_basic_strings_are_expanded_and_end_where_toml_ends_them() {
        let text = "a = \"\"\"x \"q\" \\\"\"\" ${HOME}\"\"\"\nb = '${NOPE}'\n# ${NOPE}\n";
        let out = expand(text, env).expect("expands");
        let table: toml::Table = toml::from_str(&out).expect("TOML");
        assert_eq!(table["a"].as_str(), Some("x \"q\" \"\"\" /home/me"));
        assert_eq!(table["b"].as_str(), Some("${NOPE}"));
        let out = expand("a = \"\"\"${TRICKY}\"\"\"", env).expect("expands");
        let table: toml::Table = toml::from_str(&out).expect("TOML");
        assert_eq!(table["a"].as_str(), Some("a\"b\\c\nd"));
    }

    #[test]
    fn double_dollar_is_a_literal() {
        assert_eq!(
            expand("a = \"$${HOME}\"", env).expect("ok"),
            "a = \"${HOME}\""
        );
    }
}
