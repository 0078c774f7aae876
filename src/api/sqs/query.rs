//! The SQS Query protocol (form-encoded requests, XML answers), translated onto the JSON dispatcher.

use super::error::SqsError;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

const XMLNS: &str = "http://queue.amazonaws.com/doc/2012-11-05/";

/// Decoded form parameters, by name (each given once).
type Params = BTreeMap<String, String>;

/// Parameters copied as they are.
const STRINGS: &str = "QueueUrl QueueName QueueNamePrefix NextToken MessageBody \
    MessageDeduplicationId MessageGroupId ReceiveRequestAttemptId ReceiptHandle Id \
    SourceArn DestinationArn TaskHandle";
/// Parameters that become JSON numbers.
const INTEGERS: &str = "MaxResults DelaySeconds MaxNumberOfMessages VisibilityTimeout \
    WaitTimeSeconds MaxNumberOfMessagesPerSecond";
/// `{Name}.N` lists, each the JSON array `{Name}s`.
const LISTS: &str = "AttributeName MessageSystemAttributeName MessageAttributeName TagKey";
/// Batch actions; their `{Action}RequestEntry.N.*` parameters become `Entries`.
const BATCHES: &str = "SendMessageBatch DeleteMessageBatch ChangeMessageVisibilityBatch";
/// Actions whose XML answer has no `{Action}Result` element.
const EMPTY_RESULTS: &str = "DeleteMessage ChangeMessageVisibility PurgeQueue DeleteQueue \
    SetQueueAttributes TagQueue UntagQueue AddPermission RemovePermission";
/// The elements of a sent message (in SendMessageResult and SendMessageBatchResultEntry).
const SENT: &str = "MessageId MD5OfMessageBody MD5OfMessageAttributes MD5OfMessageSystemAttributes \
    SequenceNumber";

/// Reads a Query request (form body plus URL query; a name given twice is refused) into its
/// action and the JSON-protocol request body the dispatcher expects.
pub(super) fn parse_form(
    body: &[u8],
    uri_query: Option<&str>,
) -> Result<(String, Value), SqsError> {
    let mut params = Params::new();
    decode_into(uri_query.unwrap_or_default().as_bytes(), &mut params)?;
    decode_into(body, &mut params)?;
    let action = params
        .remove("Action")
        .filter(|action| !action.is_empty())
        .ok_or_else(|| {
            SqsError::sender(
                "MissingAction",
                "Either Action or Operation query parameter must be present.",
            )
        })?;
    let request = convert(&action, &params)?;
    Ok((action, Value::Object(request)))
}

fn decode_into(form: &[u8], params: &mut Params) -> Result<(), SqsError> {
    for pair in form.split(|&b| b == b'&').filter(|pair| !pair.is_empty()) {
        let (key, value) = match pair.iter().position(|&b| b == b'=') {
            Some(at) => (&pair[..at], &pair[at + 1..]),
            None => (pair, &pair[..0]),
        };
        let key = unescape(key)?;
        if params.insert(key.clone(), unescape(value)?).is_some() {
            // One meaning per parameter: the URL's and the body's may not disagree.
            return Err(SqsError::invalid_parameter(format!(
                "The parameter {} is given more than once.",
                clipped(&key)
            )));
        }
    }
    Ok(())
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte; a stray `%` stays.
fn unescape(raw: &[u8]) -> Result<String, SqsError> {
    let digit = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'+' => out.push(b' '),
            b'%' => match raw
                .get(i + 1..i + 3)
                .map(|hex| (digit(hex[0]), digit(hex[1])))
            {
                Some((Some(high), Some(low))) => {
                    out.push((high * 16 + low) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8(out)
        .map_err(|_| SqsError::invalid_parameter("The request parameters are not valid UTF-8."))
}

/// The `{prefix}.N[.rest]` parameters, grouped by N (in numeric order), keyed by `rest` ("" if none);
/// an N that is not a number (negative, or too large) is refused, not dropped.
fn indexed(params: &Params, prefix: &str) -> Result<BTreeMap<u32, Params>, SqsError> {
    let mut groups: BTreeMap<u32, Params> = BTreeMap::new();
    for (key, value) in params {
        let Some(rest) = key.strip_prefix(prefix).and_then(|r| r.strip_prefix('.')) else {
            continue;
        };
        let (n, rest) = rest.split_once('.').unwrap_or((rest, ""));
        let n = n.parse::<u32>().map_err(|_| {
            SqsError::invalid_parameter(format!(
                "The parameter {} has no valid index.",
                clipped(key)
            ))
        })?;
        groups
            .entry(n)
            .or_default()
            .insert(rest.to_owned(), value.clone());
    }
    Ok(groups)
}

/// A client's parameter name as an error shows it: at most 64 characters.
fn clipped(text: &str) -> String {
    text.chars().take(64).collect()
}

/// Refuses a name given twice in one list of named entries (SQS does; a map would keep the last).
fn named_once(map: &mut Map<String, Value>, name: &str, value: Value) -> Result<(), SqsError> {
    if map.insert(name.to_owned(), value).is_some() {
        return Err(SqsError::invalid_parameter(format!(
            "The name {} is given more than once.",
            clipped(name)
        )));
    }
    Ok(())
}

/// Flattened Query parameters (of a request, or of one batch entry) to a JSON-protocol object.
fn convert(action: &str, params: &Params) -> Result<Map<String, Value>, SqsError> {
    let mut out = Map::new();
    for name in STRINGS.split_whitespace() {
        if let Some(value) = params.get(name) {
            out.insert(name.into(), json!(value));
        }
    }
    for name in INTEGERS.split_whitespace() {
        if let Some(value) = params.get(name) {
            let number = value.parse::<i64>().map_err(|_| {
                SqsError::invalid_parameter(format!(
                    "Value {value} for parameter {name} is invalid. Reason: Must be an integer."
                ))
            })?;
            out.insert(name.into(), json!(number));
        }
    }
    for prefix in LISTS.split_whitespace() {
        // A bare `AttributeName=All` (as older clients send it) counts as the first item.
        let bare = params.get(prefix).into_iter();
        let groups = indexed(params, prefix)?;
        let items: Vec<Value> = bare
            .chain(groups.values().filter_map(|g| g.get("")))
            .map(|v| json!(v))
            .collect();
        if !items.is_empty() {
            out.insert(format!("{prefix}s"), Value::Array(items));
        }
    }
    for (prefix, field) in [
        ("MessageAttribute", "MessageAttributes"),
        ("MessageSystemAttribute", "MessageSystemAttributes"),
    ] {
        let groups = indexed(params, prefix)?;
        if groups.is_empty() {
            continue;
        }
        let mut attributes = Map::new();
        for (n, group) in groups {
            let name = group
                .get("Name")
                .ok_or_else(|| SqsError::missing_parameter(&format!("{prefix}.{n}.Name")))?;
            let data_type = group.get("Value.DataType").ok_or_else(|| {
                SqsError::invalid_parameter(format!(
                    "The message attribute '{name}' must contain a non-empty message attribute type."
                ))
            })?;
            let mut value = Map::new();
            value.insert("DataType".into(), json!(data_type));
            for kind in ["StringValue", "BinaryValue"] {
                if let Some(v) = group.get(&format!("Value.{kind}")) {
                    value.insert(kind.into(), json!(v));
                }
            }
            named_once(&mut attributes, name, Value::Object(value))?;
        }
        out.insert(field.into(), Value::Object(attributes));
    }
    // CreateQueue's JSON request names its tags `tags`, lower-case; TagQueue's are `Tags`.
    let tags = if action == "CreateQueue" {
        "tags"
    } else {
        "Tags"
    };
    for (prefix, key, field) in [("Attribute", "Name", "Attributes"), ("Tag", "Key", tags)] {
        let groups = indexed(params, prefix)?;
        if groups.is_empty() {
            continue;
        }
        let mut map = Map::new();
        for (n, group) in groups {
            let name = group
                .get(key)
                .ok_or_else(|| SqsError::missing_parameter(&format!("{prefix}.{n}.{key}")))?;
            let value = group.get("Value").cloned().unwrap_or_default();
            named_once(&mut map, name, json!(value))?;
        }
        out.insert(field.into(), Value::Object(map));
    }
    for batch in BATCHES.split_whitespace() {
        let groups = indexed(params, &format!("{batch}RequestEntry"))?;
        if !groups.is_empty() {
            let entries = groups
                .values()
                .map(|entry| convert(action, entry).map(Value::Object))
                .collect::<Result<Vec<_>, _>>()?;
            out.insert("Entries".into(), Value::Array(entries));
        }
    }
    Ok(out)
}

/// Renders a JSON-protocol answer of `action` as the Query protocol's XML answer (with its
/// `<?xml version="1.0"?>` declaration, as SQS sends it).
pub(super) fn render_answer(action: &str, answer: &Value, request_id: &str) -> String {
    let action: String = action.chars().filter(char::is_ascii_alphanumeric).collect();
    let mut xml = format!("<?xml version=\"1.0\"?><{action}Response xmlns=\"{XMLNS}\">");
    if !EMPTY_RESULTS.split_whitespace().any(|a| a == action) {
        let inner = result(&action, answer);
        if inner.is_empty() {
            xml += &format!("<{action}Result/>");
        } else {
            xml += &format!("<{action}Result>{inner}</{action}Result>");
        }
    }
    xml += &format!(
        "<ResponseMetadata><RequestId>{}</RequestId></ResponseMetadata></{action}Response>",
        escape(request_id)
    );
    xml
}

/// Renders an error in the Query protocol's shape, with its Query code.
pub(super) fn render_error(error: &SqsError, request_id: &str) -> String {
    let fault = if error.sender { "Sender" } else { "Receiver" };
    format!(
        "<?xml version=\"1.0\"?><ErrorResponse xmlns=\"{XMLNS}\"><Error><Type>{fault}</Type><Code>{}</Code><Message>{}</Message><Detail/></Error><RequestId>{}</RequestId></ErrorResponse>",
        escape(error.query_code),
        escape(&error.message),
        escape(request_id)
    )
}

/// The inside of `{action}Result`.
fn result(action: &str, answer: &Value) -> String {
    let mut out = String::new();
    match action {
        "ListQueues" | "ListDeadLetterSourceQueues" => {
            // Both are flattened lists whose members are named `QueueUrl` in the Query model
            // (ListDeadLetterSourceQueues' member is `queueUrls` only in JSON).
            let element = "QueueUrl";
            for url in items(answer, "QueueUrls").chain(items(answer, "queueUrls")) {
                element_of(&mut out, element, url);
            }
            fields(&mut out, answer, "NextToken");
        }
        "GetQueueAttributes" => pairs(&mut out, answer.get("Attributes"), "Attribute", "Name"),
        "ListMessageMoveTasks" => {
            for task in items(answer, "Results") {
                out += "<ListMessageMoveTasksResultEntry>";
                fields(
                    &mut out,
                    task,
                    "TaskHandle Status SourceArn DestinationArn MaxNumberOfMessagesPerSecond \
                     ApproximateNumberOfMessagesMoved ApproximateNumberOfMessagesToMove \
                     FailureReason StartedTimestamp",
                );
                out += "</ListMessageMoveTasksResultEntry>";
            }
        }
        "ListQueueTags" => pairs(&mut out, answer.get("Tags"), "Tag", "Key"),
        "SendMessage" => fields(&mut out, answer, SENT),
        "SendMessageBatch" | "DeleteMessageBatch" | "ChangeMessageVisibilityBatch" => {
            for entry in items(answer, "Successful") {
                out += &format!("<{action}ResultEntry>");
                fields(&mut out, entry, "Id");
                fields(&mut out, entry, SENT);
                out += &format!("</{action}ResultEntry>");
            }
            for entry in items(answer, "Failed") {
                out += "<BatchResultErrorEntry>";
                fields(&mut out, entry, "Id SenderFault Code Message");
                out += "</BatchResultErrorEntry>";
            }
        }
        "ReceiveMessage" => {
            for message in items(answer, "Messages") {
                out += "<Message>";
                fields(&mut out, message, "MessageId ReceiptHandle MD5OfBody Body");
                pairs(&mut out, message.get("Attributes"), "Attribute", "Name");
                fields(&mut out, message, "MD5OfMessageAttributes");
                if let Some(Value::Object(attributes)) = message.get("MessageAttributes") {
                    for (name, value) in attributes {
                        out += "<MessageAttribute>";
                        element_of(&mut out, "Name", &Value::String(name.clone()));
                        out += "<Value>";
                        fields(&mut out, value, "DataType StringValue BinaryValue");
                        out += "</Value></MessageAttribute>";
                    }
                }
                out += "</Message>";
            }
        }
        // GetQueueUrl, CreateQueue (QueueUrl), and the rest: each scalar field as an element.
        _ => {
            if let Value::Object(map) = answer {
                for (name, value) in map {
                    element_of(&mut out, name, value);
                }
            }
        }
    }
    out
}

fn items<'a>(value: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    value
        .get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// `<name>value</name>`, for a string, number or boolean; nothing otherwise.
fn element_of(out: &mut String, name: &str, value: &Value) {
    let text = match value {
        Value::String(text) => escape(text),
        Value::Number(number) => number.to_string(),
        Value::Bool(flag) => flag.to_string(),
        _ => return,
    };
    *out += &format!("<{name}>{text}</{name}>");
}

/// The fields named (space-separated) of `value`, in that order, as elements.
fn fields(out: &mut String, value: &Value, names: &str) {
    for name in names.split_whitespace() {
        if let Some(field) = value.get(name) {
            element_of(out, name, field);
        }
    }
}

/// A JSON map as repeated `<element><{key}>k</{key}><Value>v</Value></element>`.
fn pairs(out: &mut String, map: Option<&Value>, element: &str, key: &str) {
    if let Some(Value::Object(map)) = map {
        for (name, value) in map {
            *out += &format!("<{element}><{key}>{}</{key}>", escape(name));
            element_of(out, "Value", value);
            *out += &format!("</{element}>");
        }
    }
}

/// XML text escaping; `\r` as a character reference so that XML parsers do not turn it into `\n`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out += "&amp;",
            '<' => out += "&lt;",
            '>' => out += "&gt;",
            '"' => out += "&quot;",
            '\'' => out += "&apos;",
            '\r' => out += "&#xD;",
            // XML has no form for other controls; stored data is checked on the way in, but an
            // answer must parse whatever reached the store before.
            c if !crate::core::message_rules::allowed_char(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "<?xml version=\"1.0\"?>";

    #[test]
    fn send_message_form_becomes_json() {
        let form = "Action=SendMessage&Version=2012-11-05&QueueUrl=http%3A%2F%2Flocalhost%2F000000000000%2Forders\
            &MessageBody=hello+world&DelaySeconds=5\
            &MessageAttribute.2.Name=blob&MessageAttribute.2.Value.DataType=Binary&MessageAttribute.2.Value.BinaryValue=AAE%2B\
            &MessageAttribute.1.Name=kind&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=order";
        let (action, request) = parse_form(form.as_bytes(), None).unwrap();
        assert_eq!(action, "SendMessage");
        assert_eq!(
            request,
            json!({
                "QueueUrl": "http://localhost/000000000000/orders",
                "MessageBody": "hello world",
                "DelaySeconds": 5,
                "MessageAttributes": {
                    "kind": {"DataType": "String", "StringValue": "order"},
                    "blob": {"DataType": "Binary", "BinaryValue": "AAE+"},
                },
            })
        );
    }

    #[test]
    fn batch_entries_keep_numeric_order() {
        let form = "Action=SendMessageBatch&QueueUrl=q\
            &SendMessageBatchRequestEntry.10.Id=b&SendMessageBatchRequestEntry.10.MessageBody=second\
            &SendMessageBatchRequestEntry.10.MessageGroupId=g&SendMessageBatchRequestEntry.10.MessageDeduplicationId=d\
            &SendMessageBatchRequestEntry.2.Id=a&SendMessageBatchRequestEntry.2.MessageBody=first\
            &SendMessageBatchRequestEntry.2.DelaySeconds=1\
            &SendMessageBatchRequestEntry.2.MessageAttribute.1.Name=k\
            &SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.DataType=Number\
            &SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.StringValue=1";
        let (_, request) = parse_form(form.as_bytes(), None).unwrap();
        assert_eq!(
            request,
            json!({
                "QueueUrl": "q",
                "Entries": [
                    {"Id": "a", "MessageBody": "first", "DelaySeconds": 1,
                     "MessageAttributes": {"k": {"DataType": "Number", "StringValue": "1"}}},
                    {"Id": "b", "MessageBody": "second", "MessageGroupId": "g", "MessageDeduplicationId": "d"},
                ],
            })
        );
    }

    #[test]
    fn receive_message_gets_numbers_and_lists() {
        let form = "QueueUrl=q&AttributeName.1=All&MessageAttributeName.1=All&MaxNumberOfMessages=10&WaitTimeSeconds=20";
        let (action, request) = parse_form(form.as_bytes(), Some("Action=ReceiveMessage")).unwrap();
        assert_eq!(action, "ReceiveMessage");
        assert_eq!(
            request,
            json!({
                "QueueUrl": "q",
                "AttributeNames": ["All"],
                "MessageAttributeNames": ["All"],
                "MaxNumberOfMessages": 10,
                "WaitTimeSeconds": 20,
            })
        );
        let bad = parse_form(b"Action=ReceiveMessage&MaxNumberOfMessages=ten", None).unwrap_err();
        assert_eq!(bad.code, "InvalidParameterValue");
    }

    #[test]
    fn form_decoding_handles_plus_and_percent() {
        let form = b"Action=SendMessage&MessageBody=a+b%20c%2Bd%E2%82%AC%&ReceiptHandle";
        let (_, request) = parse_form(form, None).unwrap();
        assert_eq!(
            request,
            json!({"MessageBody": "a b c+d\u{20ac}%", "ReceiptHandle": ""})
        );
        assert!(parse_form(b"Action=SendMessage&MessageBody=%FF", None).is_err());
    }

    #[test]
    fn a_parameter_given_twice_is_refused() {
        let twice = parse_form(b"Action=DeleteQueue&QueueUrl=q", Some("Action=GetQueueUrl"));
        assert_eq!(twice.unwrap_err().code, "InvalidParameterValue");
        let twice = parse_form(b"Action=SendMessage&MessageBody=a&MessageBody=b", None);
        assert_eq!(twice.unwrap_err().code, "InvalidParameterValue");
    }

    #[test]
    fn missing_action_is_refused() {
        let error = parse_form(b"QueueUrl=q", Some("Version=2012-11-05")).unwrap_err();
        assert_eq!(error.code, "MissingAction");
        assert_eq!(error.query_code, "MissingAction");
        assert!(error.sender);
    }

    #[test]
    fn receive_message_answer_renders_like_sqs() {
        let answer = json!({"Messages": [{
            "MessageId": "m-1",
            "ReceiptHandle": "rh+1/=",
            "MD5OfBody": "body-md5",
            "Body": "a & <b>",
            "Attributes": {"SenderId": "000000000000"},
            "MD5OfMessageAttributes": "attr-md5",
            "MessageAttributes": {"kind": {"DataType": "String", "StringValue": "order"}},
        }]});
        let expected = format!(
            "{HEAD}<ReceiveMessageResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\"><ReceiveMessageResult><Message>\
            <MessageId>m-1</MessageId><ReceiptHandle>rh+1/=</ReceiptHandle><MD5OfBody>body-md5</MD5OfBody>\
            <Body>a &amp; &lt;b&gt;</Body><Attribute><Name>SenderId</Name><Value>000000000000</Value></Attribute>\
            <MD5OfMessageAttributes>attr-md5</MD5OfMessageAttributes><MessageAttribute><Name>kind</Name>\
            <Value><DataType>String</DataType><StringValue>order</StringValue></Value></MessageAttribute>\
            </Message></ReceiveMessageResult><ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata>\
            </ReceiveMessageResponse>"
        );
        assert_eq!(render_answer("ReceiveMessage", &answer, "req-1"), expected);
    }

    #[test]
    fn empty_answers_have_no_result_element() {
        assert_eq!(
            render_answer("DeleteMessage", &json!({}), "req-2"),
            format!(
                "{HEAD}<DeleteMessageResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\">\
                <ResponseMetadata><RequestId>req-2</RequestId></ResponseMetadata></DeleteMessageResponse>"
            )
        );
    }

    #[test]
    fn errors_render_with_their_query_code() {
        assert_eq!(
            render_error(&SqsError::queue_does_not_exist(), "req-3"),
            format!(
                "{HEAD}<ErrorResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\"><Error><Type>Sender</Type>\
                <Code>AWS.SimpleQueueService.NonExistentQueue</Code><Message>The specified queue does not exist.</Message>\
                <Detail/></Error><RequestId>req-3</RequestId></ErrorResponse>"
            )
        );
    }
}
