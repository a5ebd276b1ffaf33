use super::*;
use crate::config_error::keys;
use regex::Regex;

fn name(p: &str) -> Pattern {
    Pattern::new(p).expect(p)
}

fn uri(p: &str) -> Pattern {
    Pattern::uri(p).expect(p)
}

#[test]
fn name_globs_match_whole_names() {
    let p = name("read_*");
    assert!(p.is_match("read_file") && p.is_match("read_"));
    assert!(!p.is_match("unread_file") && !p.is_match("read"));
    assert!(name("*secret*").is_match("get_secret_key"));
    assert!(name("file?").is_match("files") && !name("file?").is_match("file"));
    assert!(name("a.b").is_match("a.b") && !name("a.b").is_match("axb"));
}

#[test]
fn star_crosses_slash_in_names() {
    assert!(name("*").is_match("tools/call"));
    assert!(name("notifications/*").is_match("notifications/tools/list_changed"));
    assert!(name("sampling/createMessage").is_match("sampling/createMessage"));
}

#[test]
fn star_stops_at_slash_in_uris_and_double_star_crosses() {
    assert!(uri("file:///etc/*").is_match("file:///etc/passwd"));
    assert!(!uri("file:///etc/*").is_match("file:///etc/ssl/cert.pem"));
    assert!(uri("file:///etc/**").is_match("file:///etc/ssl/cert.pem"));
    assert!(uri("file:///etc/**").is_match("file:///etc/"));
    assert!(!uri("file:///etc/**").is_match("file:///etcetera"));
    assert!(!uri("file:///tmp/?").is_match("file:///tmp//"));
    assert!(uri("**/.env").is_match("file:///srv/app/.env"));
}

#[test]
fn classes_ranges_and_negation() {
    let p = name("v[0-9]");
    assert!(p.is_match("v1") && !p.is_match("vx"));
    assert!(name("[!a]b").is_match("xb") && !name("[!a]b").is_match("ab"));
    assert!(name("[^a]b").is_match("xb"));
    assert!(name("[]]").is_match("]"));
    assert!(name("[a-]").is_match("-"));
    assert!(name("[&&]").is_match("&"));
    assert!(!uri("a[!x]b").is_match("a/b"));
}

#[test]
fn backslash_escapes_and_regex_metacharacters_are_literal() {
    assert!(name("a\\*").is_match("a*") && !name("a\\*").is_match("ab"));
    assert!(name("a+(b)").is_match("a+(b)"));
    assert!(name("$^|{}").is_match("$^|{}"));
}

#[test]
fn regex_patterns_are_anchored() {
    let p = name("re:read_.*|list_.*");
    assert!(p.is_match("read_file") && p.is_match("list_dir"));
    assert!(!p.is_match("unread_file") && !p.is_match("xlist_dir"));
    assert!(!name("re:read").is_match("reader"));
    assert_eq!(p.as_str(), "re:read_.*|list_.*");
}

#[test]
fn bad_patterns_are_errors() {
    let glob = |source: &str, why| BadPattern::Glob {
        pattern: source.to_owned(),
        why,
    };
    for (source, why) in [
        ("[abc", GlobFault::Unclosed),
        ("[z-a]", GlobFault::Backwards('z', 'a')),
        ("abc\\", GlobFault::TrailingEscape),
        ("[a-\\", GlobFault::TrailingEscape),
    ] {
        assert_eq!(Pattern::new(source).expect_err(source), glob(source, why));
    }
    assert_eq!(
        Pattern::new("[abc").expect_err("unclosed").to_string(),
        r#"bad glob "[abc": unclosed ["#
    );
    let regex = Pattern::new("re:(").expect_err("must fail");
    assert!(
        matches!(&regex, BadPattern::Regex { pattern, .. } if pattern == "re:("),
        "{regex:?}"
    );
    assert!(regex.to_string().starts_with(r#"bad pattern "re:(": "#));
}

fn list(allow: Option<&[&str]>, deny: &[&str]) -> PatternList {
    AllowDenyConfig {
        allow: allow.map(|a| a.iter().map(|s| s.to_string()).collect()),
        deny: deny.iter().map(|s| s.to_string()).collect(),
    }
    .validate(Syntax::Name, "tools")
    .expect("valid")
}

#[test]
fn deny_wins_and_allow_means_default_deny() {
    let l = list(Some(&["read_*", "list_*"]), &["*secret*"]);
    assert!(l.allows("read_file") && l.allows("list_dir"));
    assert!(!l.allows("read_secret") && !l.allows("write_file"));
    let deny_only = list(None, &["rm"]);
    assert!(deny_only.allows("anything") && !deny_only.allows("rm"));
    assert!(!list(Some(&[]), &[]).allows("x"));
    assert!(list(None, &[]).allows_all());
}

#[test]
fn list_errors_name_the_key_path() {
    let err = AllowDenyConfig {
        allow: Some(vec!["ok".into(), "re:(".into()]),
        deny: vec![],
    }
    .validate(Syntax::Name, "tools")
    .expect_err("must fail");
    assert_eq!(err.at, keys!["tools", "allow", 1], "{err}");
}

/// The regex a glob means, written from its pieces: the oracle the glob
/// matcher is checked against.
fn oracle(glob: &glob::Glob) -> Regex {
    use glob::Piece;
    let any = |slash: bool| if slash { "(?s:.)" } else { "[^/]" };
    let mut re = String::from("^(?:");
    for piece in glob.pieces() {
        match piece {
            Piece::Char(c) => re.push_str(&regex::escape(&c.to_string())),
            Piece::Any { slash } => re.push_str(any(*slash)),
            Piece::Run { slash } => {
                re.push_str(any(*slash));
                re.push('*');
            }
            Piece::Class {
                negated,
                ranges,
                slash,
            } => {
                re.push('[');
                if *negated {
                    re.push('^');
                    if !slash {
                        re.push('/');
                    }
                }
                for (lo, hi) in ranges {
                    re.push_str(&format!("\\x{{{:x}}}-\\x{{{:x}}}", *lo as u32, *hi as u32));
                }
                re.push(']');
            }
        }
    }
    re.push_str(")$");
    Regex::new(&re).expect("oracle regex")
}

#[test]
fn globs_match_exactly_what_their_regex_would() {
    // A fixed-seed generator: globs from these pieces, texts from these
    // characters, every glob against every text, in both syntaxes.
    let mut next = crate::testing::numbers(0x9E37_79B9_7F4A_7C15);
    let glob_parts = [
        "a", "b", "/", "*", "**", "?", "[ab]", "[!a]", "[/]", "[a-c]", "é", "\\*", ".",
    ];
    let text_chars = ['a', 'b', 'c', '/', 'é', '*', '.'];
    let (mut checked, mut matched) = (0, 0);
    for _ in 0..400 {
        let glob: String = (0..1 + next(6))
            .map(|_| glob_parts[next(glob_parts.len())])
            .collect();
        for syntax in [Syntax::Name, Syntax::Uri] {
            let parsed = glob::Glob::parse(&glob, syntax).expect("valid glob");
            let regex = oracle(&parsed);
            for _ in 0..40 {
                // Mostly short texts; some past the length where literal
                // parts are looked for with `memmem` instead of a loop.
                let len = if next(4) == 0 { 60 + next(20) } else { next(8) };
                let text: String = (0..len)
                    .map(|_| text_chars[next(text_chars.len())])
                    .collect();
                assert_eq!(
                    parsed.is_match(&text),
                    regex.is_match(&text),
                    "glob {glob:?} ({syntax:?}) on {text:?}"
                );
                // A glob said to match everything does.
                assert!(
                    !parsed.matches_all() || regex.is_match(&text),
                    "glob {glob:?} ({syntax:?}) said to match all, not {text:?}"
                );
                checked += 1;
                matched += usize::from(regex.is_match(&text));
            }
        }
    }
    assert_eq!(checked, 400 * 2 * 40);
    // Both outcomes well represented, or the comparison proves little.
    assert!(
        matched > checked / 20 && matched < checked / 2,
        "{matched} of {checked}"
    );
}

#[test]
fn long_globs_and_many_stars_stay_linear() {
    // Past the stack-sized state set, and a glob that makes a backtracking
    // matcher take exponential time.
    let long = format!("{}*", "a".repeat(100));
    assert!(name(&long).is_match(&"a".repeat(150)));
    assert!(!name(&long).is_match(&"a".repeat(99)));
    let stars = "*a".repeat(30) + "b";
    assert!(!name(&stars).is_match(&"a".repeat(200)));
    assert!(name(&stars).is_match(&("a".repeat(40) + "b")));
}

#[test]
fn a_list_holding_a_match_all_pattern_allows_every_name() {
    for (source, syntax, all) in [
        ("*", Syntax::Name, true),
        ("**", Syntax::Name, true),
        ("***", Syntax::Uri, true),
        ("**", Syntax::Uri, true),
        ("*", Syntax::Uri, false),
        ("a*", Syntax::Name, false),
        ("*?", Syntax::Name, false),
        ("re:.*", Syntax::Name, false),
    ] {
        let pattern = Pattern::with_syntax(source, syntax).expect("valid");
        assert_eq!(pattern.matches_all(), all, "{source} ({syntax:?})");
    }
    let star = |s: &str| Pattern::new(s).expect("valid");
    let list = PatternList::new(Some(vec![star("x"), star("*")]), vec![star("*secret*")]);
    for (name, allowed) in [("x", true), ("any", true), ("", true), ("a_secret", false)] {
        assert_eq!(list.allows(name), allowed, "{name}");
    }
}
