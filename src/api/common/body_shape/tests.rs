//! Unit tests of `src/api/common/body_shape.rs`.

use super::*;
use crate::core::ErrorKind;

const COUNT: Field<Integer> = Field::optional(
    "count",
    "How many.",
    Integer::from_to(1, 10).default(1).example(5),
);
const SECONDS: Field<Integer> = Field::required("seconds", "How long.", Integer::from_to(0, 900));
const NAME: Field<Text> = Field::required("name", "A name.", Text::word(1, 8, "-_"));
const MODE: Field<Choice> = Field::optional(
    "mode",
    "The mode.",
    Choice {
        names: &["slow", "fast", "off"],
        default: "slow",
        schema: || Cow::Borrowed("Mode"),
        null_is_default: false,
    },
);
const QUIET: Field<Flag> = Field::optional("quiet", "Whether quiet.", Flag::ANY);
const SHAPE: Shape = Shape {
    doc: "A body.",
    fields: &[&COUNT, &SECONDS, &NAME, &MODE, &QUIET],
    example: None,
};

fn object(body: Value) -> Map<String, Value> {
    SHAPE.parse(body.to_string().as_bytes(), false).unwrap()
}

fn refusal(result: Result<impl std::fmt::Debug, GatewayError>) -> (ErrorKind, String) {
    let error = result.unwrap_err();
    (error.kind, error.message)
}

#[test]
fn the_schema_prints_the_table() {
    let schema = serde_json::to_value(SHAPE.schema()).unwrap();
    assert_eq!(schema["additionalProperties"], json!(false));
    assert_eq!(schema["required"], json!(["seconds", "name"]));
    let count = &schema["properties"]["count"];
    assert_eq!(count["type"], json!(["integer", "null"]));
    assert_eq!(
        (&count["minimum"], &count["maximum"], &count["default"]),
        (&json!(1), &json!(10), &json!(1))
    );
    assert_eq!(count["example"], json!(5));
    assert_eq!(schema["properties"]["seconds"]["type"], json!("integer"));
    let name = &schema["properties"]["name"];
    assert_eq!(name["pattern"], json!("^[A-Za-z0-9_-]{1,8}$"));
    assert_eq!(
        (&name["minLength"], &name["maxLength"]),
        (&json!(1), &json!(8))
    );
    let mode = &schema["properties"]["mode"];
    assert_eq!(mode["oneOf"][0]["$ref"], json!("#/components/schemas/Mode"));
    assert_eq!(mode["default"], json!("slow"));
    assert_eq!(
        schema["properties"]["quiet"]["type"],
        json!(["boolean", "null"])
    );
}

#[test]
fn the_parser_reads_through_the_table() {
    let given = object(json!({"seconds": 900, "name": "a-b_9", "mode": "off", "count": null}));
    assert_eq!(COUNT.value(&given, "").unwrap(), 1);
    assert_eq!(SECONDS.value(&given, "").unwrap(), 900);
    assert_eq!(NAME.value(&given, "").unwrap(), "a-b_9");
    assert_eq!(MODE.read(&given, "").unwrap(), "off");
    assert_eq!(QUIET.read(&given, "").unwrap(), None);
    let defaults = object(json!({}));
    assert_eq!(MODE.read(&defaults, "").unwrap(), "slow");
    assert_eq!(
        refusal(SECONDS.value(&defaults, "entries[0]")),
        (
            ErrorKind::InvalidRequest,
            "entries[0].seconds is required".to_owned()
        )
    );
    assert_eq!(
        refusal(SECONDS.read(&object(json!({"seconds": 901})), "")),
        (
            ErrorKind::OutOfRange,
            "seconds must be an integer from 0 to 900".to_owned()
        )
    );
    for name in [
        json!(""),
        json!("a.b"),
        json!("abcdefghi"),
        json!(null),
        json!(5),
    ] {
        assert_eq!(
            refusal(NAME.value(&object(json!({ "name": name })), "")).1,
            "name must be 1 to 8 letters, digits, `-` or `_`"
        );
    }
    for mode in [json!(null), json!("Fast"), json!(1)] {
        assert_eq!(
            refusal(MODE.read(&object(json!({ "mode": mode })), "at")).1,
            "at.mode must be slow, fast or off"
        );
    }
    assert_eq!(
        refusal(QUIET.read(&object(json!({"quiet": "yes"})), "")).1,
        "quiet must be true or false"
    );
}

#[test]
fn unknown_keys_are_refused_naming_the_tables_fields_not_the_key() {
    let (kind, message) = refusal(SHAPE.parse(br#"{"secret-key": 1}"#, false));
    assert_eq!(kind, ErrorKind::InvalidRequest);
    assert_eq!(
        message,
        "unknown field; expected only: count, seconds, name, mode, quiet"
    );
    let nested = Map::from_iter([("x".to_owned(), json!(1))]);
    assert!(
        refusal(SHAPE.check(&nested, "entries[2]").map(|()| 0))
            .1
            .starts_with("entries[2]: unknown field")
    );
}

#[test]
fn text_lengths_count_characters_as_json_schema_does() {
    const LABEL: Field<Text> = Field::optional("label", "A label.", Text::any().least(1).most(3));
    let read = |value: Value| {
        LABEL
            .read(&Map::from_iter([("label".to_owned(), value)]), "")
            .map(|text| text.map(str::to_owned))
    };
    assert_eq!(
        read(json!("ééé")).unwrap().as_deref(),
        Some("ééé"),
        "6 bytes, 3 characters"
    );
    assert!(read(json!("éééé")).is_err());
    assert!(read(json!("abcd")).is_err());
    assert!(read(json!("")).is_err());
    assert_eq!(read(Value::Null).unwrap(), None);
}

#[test]
fn distinct_lists_refuse_a_repeated_or_empty_item_by_its_place() {
    const HANDLES: Field<List> = Field::required(
        "handles",
        "Handles.",
        List::of(Items::Text, 1, 3).distinct().non_empty_items(),
    );
    let strings = |value: Value| {
        let object = Map::from_iter([("handles".to_owned(), value)]);
        HANDLES.strings(&object, "").map(|items| items.len())
    };
    assert_eq!(strings(json!(["a", "b"])).unwrap(), 2);
    assert_eq!(
        refusal(strings(json!(["a", "a"]))).1,
        "handles must be distinct"
    );
    assert_eq!(
        refusal(strings(json!(["a", ""]))).1,
        "handles[1] must be a non-empty string"
    );
    let schema = serde_json::to_value(HANDLES.schema()).unwrap();
    assert_eq!(schema["uniqueItems"], json!(true));
    assert_eq!(schema["items"]["minLength"], json!(1));
}

#[test]
fn a_choice_may_take_null_for_its_default() {
    const LENIENT: Field<Choice> = Field::optional(
        "mode",
        "The mode.",
        Choice {
            names: &["slow", "fast"],
            default: "slow",
            schema: || Cow::Borrowed("Mode"),
            null_is_default: true,
        },
    );
    let null = Map::from_iter([("mode".to_owned(), Value::Null)]);
    assert_eq!(LENIENT.read(&null, "").unwrap(), "slow");
    assert!(
        MODE.read(&null, "").is_err(),
        "null is no name of a strict choice"
    );
}
