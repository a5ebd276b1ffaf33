use super::*;

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
    assert!(Pattern::new("[abc")
        .expect_err("must fail")
        .contains("unclosed ["));
    assert!(Pattern::new("[z-a]")
        .expect_err("must fail")
        .contains("backwards"));
    assert!(Pattern::new("abc\\").is_err());
    assert!(Pattern::new("re:(")
        .expect_err("must fail")
        .contains("re:("));
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
    assert!(err.starts_with("tools.allow[1]: "), "{err}");
}
