use super::*;

fn at(secs: u64, micros: u32) -> String {
    let t = UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros.into());
    Timestamp(t).to_string()
}

#[test]
fn timestamps_are_rfc3339_utc_with_microseconds() {
    assert_eq!(at(0, 0), "1970-01-01T00:00:00.000000Z");
    assert_eq!(at(951_782_400, 1), "2000-02-29T00:00:00.000001Z");
    assert_eq!(at(1_700_000_000, 123_456), "2023-11-14T22:13:20.123456Z");
    assert_eq!(at(4_107_542_399, 999_999), "2100-02-28T23:59:59.999999Z");
    assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000000Z");
    assert_eq!(at(253_402_300_799, 5), "9999-12-31T23:59:59.000005Z");
    // Past year 9999 the year is clamped (a Windows SystemTime cannot
    // even hold 2^40 seconds: it ends in year 30828).
    #[cfg(unix)]
    assert_eq!(at(1 << 40, 0)[..4], *"9999");
    // As JSON: the same text, quoted.
    let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let json = serde_json::to_string(&Timestamp(t)).expect("serializes");
    assert_eq!(json, r#""2023-11-14T22:13:20.000000Z""#);
}

#[test]
fn civil_dates_round_trip_every_day_for_five_centuries() {
    let (mut y, mut m, mut d) = (1970, 1, 1);
    for days in 0..(500 * 366) {
        assert_eq!(civil_from_days(days), (y, m, d), "day {days}");
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let len = match m {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        d += 1;
        if d > len {
            (d, m) = (1, m + 1);
            if m > 12 {
                (m, y) = (1, y + 1);
            }
        }
    }
}

#[test]
fn a_line_is_json_with_every_field_in_order() {
    let id = RequestId::from(7u64);
    let params = Payload::from(serde_json::json!({"name": "a\"b"}));
    let error = ErrorObject {
        code: ErrorCode::RATE_LIMITED,
        message: "slow down".into(),
        data: None,
        extra: serde_json::Map::new(),
    };
    let session = br#","session":"0123abcd","client":"127.0.0.1:4000","token":"ci""#;
    let notes = serde_json::json!({"limit": {"original_bytes": 9}})
        .as_object()
        .cloned()
        .expect("an object");
    let record = Record {
        time: Timestamp(UNIX_EPOCH + Duration::from_secs(1_700_000_000)),
        direction: "client_to_server",
        kind: "request",
        session: Some(session),
        id: Some(&id),
        method: Some("tools/call"),
        server: Some("files"),
        tool: Some("quote\"and\\back\nslash"),
        resource: Some("file:///x"),
        resource_template: Some("file:///{p}"),
        prompt: Some("p"),
        head: None,
        outcome: Some("ok"),
        code: Some(-32_000),
        layer: Some("filter"),
        reason: Some("control \u{1} char"),
        failure: Some("gone".into()),
        duration_ms: Some(1.5),
        size: Some(42),
        input_requests: Some(vec!["sampling/createMessage".into()]),
        notes: Some(&notes),
        params: Some(&params),
        result: Some(&params),
        error: Some(&error),
    };
    let line = record.to_line();
    assert_eq!(line.last(), Some(&b'\n'));
    // A request's fields written once and reused: the same line.
    let head = record.head();
    let reused = Record {
        id: None,
        method: None,
        server: None,
        tool: None,
        resource: None,
        resource_template: None,
        prompt: None,
        head: Some(&head),
        failure: record.failure.clone(),
        input_requests: record.input_requests.clone(),
        error: Some(&error),
        ..record
    };
    assert_eq!(reused.to_line(), line);
    let value: serde_json::Map<String, Value> =
        serde_json::from_slice(&line).expect("one JSON object");
    let keys: Vec<_> = value.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "time",
            "direction",
            "kind",
            "session",
            "client",
            "token",
            "id",
            "method",
            "server",
            "tool",
            "resource",
            "resource_template",
            "prompt",
            "outcome",
            "code",
            "layer",
            "reason",
            "failure",
            "duration_ms",
            "size",
            "input_requests",
            "notes",
            "params",
            "result",
            "error"
        ]
    );
    assert_eq!(value["time"], "2023-11-14T22:13:20.000000Z");
    assert_eq!(value["id"], 7);
    assert_eq!(value["tool"], "quote\"and\\back\nslash");
    assert_eq!(value["reason"], "control \u{1} char");
    assert_eq!(value["code"], -32_000);
    assert_eq!(value["duration_ms"], 1.5);
    assert_eq!(value["notes"]["limit"]["original_bytes"], 9);
    assert_eq!(value["params"]["name"], "a\"b");
    assert_eq!(value["error"]["message"], "slow down");
    // Fields that are not there are left out.
    let line = Record::new(Direction::ToServer, "notification").to_line();
    let value: serde_json::Map<String, Value> =
        serde_json::from_slice(&line).expect("one JSON object");
    assert_eq!(
        value.keys().collect::<Vec<_>>(),
        ["time", "direction", "kind"]
    );
}
