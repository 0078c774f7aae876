//! Unit tests of `src/api/sombus/wire.rs`.

use super::*;

#[test]
fn the_receive_query_has_the_documented_defaults_and_ranges() {
    let defaults = parse_receive_query(None).unwrap();
    assert_eq!(
        (
            defaults.max_messages,
            defaults.wait_seconds,
            defaults.visibility_timeout_seconds
        ),
        (10, Some(20), Some(60))
    );
    let given = parse_receive_query(Some("max=1&wait=0&visibility=43200&attempt=a-1~!")).unwrap();
    assert_eq!(given.max_messages, 1);
    assert_eq!(given.wait_seconds, Some(0));
    assert_eq!(given.visibility_timeout_seconds, Some(43_200));
    assert_eq!(given.attempt_id.as_deref(), Some("a-1~!"));
    for bad in [
        "max=0",
        "max=11",
        "wait=21",
        "visibility=43201",
        "max=-1",
        "max=1.0",
        "max=+1",
        "max=",
        "attempt=",
        "attempt=a%20b",
        "attempt=%C3%A9",
        "max=1&max=2",
        "other=1",
    ] {
        let error = parse_receive_query(Some(bad))
            .err()
            .unwrap_or_else(|| panic!("{bad}"));
        assert_eq!(error.rule(), "pull.bad_request", "{bad}");
    }
    let long = format!("attempt={}", "a".repeat(129));
    assert!(parse_receive_query(Some(&long)).is_err());
    assert!(parse_receive_query(Some(&format!("attempt={}", "a".repeat(128)))).is_ok());
}

#[test]
fn handle_bodies_are_checked() {
    let (handles, delay) = parse_handles(
        br#"{"receipt_handles": ["a", "b"], "delay_seconds": 30}"#,
        true,
    )
    .unwrap();
    assert_eq!((handles.len(), delay), (2, 30));
    assert_eq!(
        parse_handles(br#"{"receipt_handles": ["a"]}"#, true)
            .unwrap()
            .1,
        0
    );
    for bad in [
        &br#"{"receipt_handles": []}"#[..],
        br#"{"receipt_handles": ["a", "a"]}"#,
        br#"{"receipt_handles": [1]}"#,
        br#"{"receipt_handles": [""]}"#,
        br#"{"receipt_handles": ["1","2","3","4","5","6","7","8","9","10","11"]}"#,
        br#"{"receipt_handles": ["a"], "delay_seconds": 43201}"#,
        br#"{"receipt_handles": ["a"], "extra": 1}"#,
        b"not json",
    ] {
        assert!(parse_handles(bad, true).is_err());
    }
    assert!(parse_handles(br#"{"receipt_handles": ["a"], "delay_seconds": 1}"#, false).is_err());
}
