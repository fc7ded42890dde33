use super::*;

#[test]
fn canonical_bytes_sort_members_drop_the_signature_and_keep_no_whitespace() {
    let receipt = json!({
        "type": RECEIPT_TYPE,
        "b": [1, true, null, {"z": "last", "a": "first"}],
        "a": -7,
        "signature": "not signed",
        "text": "quote \" backslash \\ tab \t nul \u{0} unit \u{1f} slash / é \u{2028}",
    });
    assert_eq!(
        canonical(&receipt).unwrap(),
        concat!(
            r#"{"a":-7,"b":[1,true,null,{"a":"first","z":"last"}],"#,
            r#""text":"quote \" backslash \\ tab \t nul \u0000 unit \u001f slash / é "#,
            "\u{2028}",
            r#"","type":"agent-zero-receipt/v1"}"#
        )
    );
    // Only the top-level `signature` is left out.
    assert_eq!(canonical(&json!({"x": {"signature": 1}})).unwrap(), r#"{"x":{"signature":1}}"#);
}

#[test]
fn canonical_bytes_do_not_depend_on_how_the_receipt_was_written() {
    let pretty =
        "{\n  \"verified\" : true,\n  \"checks\": [ ],\n  \"log\": {\"seq\": 11, \"concludedAtMs\": 1765000000000}\n}";
    let compact = r#"{"log":{"concludedAtMs":1765000000000,"seq":11},"checks":[],"verified":true}"#;
    let a: Value = serde_json::from_str(pretty).unwrap();
    let b: Value = serde_json::from_str(compact).unwrap();
    assert_eq!(canonical(&a).unwrap(), canonical(&b).unwrap());
    assert_eq!(
        canonical(&a).unwrap(),
        r#"{"checks":[],"log":{"concludedAtMs":1765000000000,"seq":11},"verified":true}"#
    );
}

#[test]
fn a_fraction_is_refused_naming_where_it_is() {
    let error = canonical(&json!({"log": {"seq": 1.5}})).unwrap_err();
    assert_eq!(error, ReceiptError::NotCanonical { path: ".log.seq".into(), value: "1.5".into() });
    assert_eq!(error.to_string(), "`.log.seq` is 1.5: a receipt holds integers only, never fractions");
}

#[test]
fn sha256_is_lowercase_hex() {
    // FIPS 180-2, appendix B.1.
    assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
