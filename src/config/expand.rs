//! `${VAR}` expansion inside the TOML's double-quoted strings.
//!
//! Expansion happens on the text before parsing, so errors keep their line
//! and column, but only inside basic ("…") strings: a value is escaped for
//! such a string, so a variable holding `"` or `\` cannot change the TOML's
//! structure. `$${VAR}` writes a literal `${VAR}`; `${1}` (not a variable
//! name: a regex group in a replacement) is left as written. Comments and
//! '…' literal strings are left alone.

/// Expands `text`; an undefined variable is an error at its line and column.
pub(super) fn expand(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, Vec<(usize, String)>> {
    let mut out = String::with_capacity(text.len());
    let mut errors = Vec::new();
    let (mut in_basic, mut in_literal, mut in_comment) = (false, false, false);
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        let c = bytes[i];
        if in_comment {
            in_comment = c != b'\n';
        } else if in_literal {
            in_literal = c != b'\'';
        } else if in_basic {
            if c == b'\\' && i + 1 < text.len() {
                // An escape: copy the backslash and the whole next character.
                let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&text[i..i + 1 + len]);
                i += 1 + len;
                continue;
            }
            if c == b'"' {
                in_basic = false;
            } else if text[i..].starts_with("$${") {
                out.push_str("${");
                i += 3;
                continue;
            } else if text[i..].starts_with("${") {
                match text[i + 2..].find('}') {
                    // `${1}` (a regex group in a replacement) is not a
                    // variable name: left as written.
                    Some(len) if !is_var_name(&text[i + 2..i + 2 + len]) => {}
                    Some(len) => {
                        let name = &text[i + 2..i + 2 + len];
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
        } else {
            match c {
                b'#' => in_comment = true,
                b'"' => in_basic = true,
                b'\'' => in_literal = true,
                _ => {}
            }
        }
        // Copy one whole UTF-8 character.
        let len = text[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&text[i..i + len]);
        i += len;
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
    fn double_dollar_is_a_literal() {
        assert_eq!(
            expand("a = \"$${HOME}\"", env).expect("ok"),
            "a = \"${HOME}\""
        );
    }
}
