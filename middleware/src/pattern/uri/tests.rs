use super::*;

fn same(spellings: &[&str], normal: &str) {
    for spelling in spellings {
        assert_eq!(normalize(spelling).as_deref(), Ok(normal), "{spelling}");
    }
}

#[test]
fn case_of_scheme_and_host_does_not_count() {
    same(
        &[
            "http://example.com/a",
            "HTTP://EXAMPLE.COM/a",
            "Http://Example.Com:80/a",
            "http://example.com:/a",
        ],
        "http://example.com/a",
    );
    // The path keeps its case: servers may tell `/A` from `/a`.
    assert_eq!(normalize("http://x/A").as_deref(), Ok("http://x/A"));
}

#[test]
fn default_ports_and_empty_paths() {
    same(
        &["https://h:443", "https://h", "HTTPS://h:443/"],
        "https://h/",
    );
    same(&["wss://h:443/x"], "wss://h/x");
    assert_eq!(normalize("http://h:8080").as_deref(), Ok("http://h:8080/"));
    assert_eq!(normalize("https://h:80/").as_deref(), Ok("https://h:80/"));
    assert!(normalize("http://h:8o/").is_err());
}

#[test]
fn escapes_of_unreserved_characters_are_the_characters() {
    same(
        &[
            "file:///etc/passwd",
            "file:///%65tc/passwd",
            "file:///%65%74%63/%70asswd",
            "FILE:///etc/passwd",
        ],
        "file:///etc/passwd",
    );
    // Other escapes stay, with upper-case hex digits.
    same(
        &["test://x/a%3ab?q=%2f", "test://x/a%3Ab?q=%2F"],
        "test://x/a%3Ab?q=%2F",
    );
}

#[test]
fn dot_segments_are_removed() {
    same(
        &[
            "file:///etc/passwd",
            "file:///tmp/../etc/passwd",
            "file:///etc/./passwd",
            "file:///../../etc/passwd",
            "file:///etc/%2e/passwd",
            "file:///x/%2E%2E/etc/passwd",
        ],
        "file:///etc/passwd",
    );
    same(&["test://h/a/b/..", "test://h/a/."], "test://h/a/");
    // Not in a query: there it is data.
    assert_eq!(
        normalize("test://h/?p=../x").as_deref(),
        Ok("test://h/?p=../x")
    );
}

#[test]
fn file_uris_as_paths() {
    same(
        &[
            "file:///etc/passwd",
            "file://localhost/etc/passwd",
            "file://LOCALHOST/etc//passwd",
            "file:////etc/passwd",
        ],
        "file:///etc/passwd",
    );
}

#[test]
fn characters_a_uri_may_not_hold_are_escaped() {
    same(
        &[
            "file:///a b/é",
            "file:///a%20b/%C3%A9",
            "file:///a%20b/%c3%a9",
        ],
        "file:///a%20b/%C3%A9",
    );
    // A template's variables are kept.
    assert_eq!(normalize("file:///{path}").as_deref(), Ok("file:///{path}"));
}

#[test]
fn what_could_be_read_two_ways_has_no_normal_form() {
    for uri in [
        "etc/passwd",
        "/etc/passwd",
        "file:///etc%2Fpasswd",
        "file:///etc%2fpasswd",
        "file:///etc%5Cpasswd",
        "file:///etc/passwd%00.txt",
        "file:///etc\\passwd",
        "file:///etc/%zz",
        "file:///etc/%4",
        "file:///etc/\npasswd",
        "1http://x/",
    ] {
        assert!(normalize(uri).is_err(), "{uri:?}");
    }
}

#[test]
fn patterns_keep_their_glob_characters() {
    assert_eq!(normalize_pattern("FILE:///etc/**"), "file:///etc/**");
    assert_eq!(
        normalize_pattern("file:///%65tc/[!a-z]?"),
        "file:///etc/[!a-z]?"
    );
    assert_eq!(
        normalize_pattern("HTTP://*.Example.com:80/\\*"),
        "http://*.example.com/\\*"
    );
    assert_eq!(normalize_pattern("file:///tmp/../etc/*"), "file:///etc/*");
    assert_eq!(normalize_pattern("file:///caf%"), "file:///caf%");
    assert_eq!(normalize_pattern("**"), "**");
    assert_eq!(normalize_pattern("file:///é/*"), "file:///%C3%A9/*");
}
