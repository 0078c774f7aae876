//! The SQS Query protocol: form-encoded requests shaped as the JSON protocol's input of the same
//! action, and the actions' typed answers written as its XML.

use super::action::SqsAction;
use super::answers::{MessageJson, SqsAnswer};
use super::error::SqsError;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

const XMLNS: &str = "http://queue.amazonaws.com/doc/2012-11-05/";

/// Form parameters by name.
type Form = BTreeMap<String, String>;

/// Parameters copied as they are.
const STRINGS: &str = "QueueUrl QueueName QueueNamePrefix NextToken MessageBody \
    MessageDeduplicationId MessageGroupId ReceiveRequestAttemptId ReceiptHandle Id \
    SourceArn DestinationArn TaskHandle Label";
/// Parameters that become JSON numbers.
const INTEGERS: &str = "MaxResults DelaySeconds MaxNumberOfMessages VisibilityTimeout \
    WaitTimeSeconds MaxNumberOfMessagesPerSecond";
/// `{Name}.N` lists, each the JSON array `{Name}s` (`ActionName.N` is `Actions`).
const LISTS: &str =
    "AttributeName MessageSystemAttributeName MessageAttributeName TagKey AWSAccountId ActionName";
/// Batch actions; their `{Action}RequestEntry.N.*` parameters become `Entries`.
const BATCHES: &str = "SendMessageBatch DeleteMessageBatch ChangeMessageVisibilityBatch";

/// Decoded form parameters, by name (each given once).
pub(super) struct Params(BTreeMap<String, String>);

/// Reads a Query request (form body plus URL query; a name given twice is refused) into the
/// action it names and its other parameters.
pub(super) fn parse_form(
    body: &[u8],
    uri_query: Option<&str>,
) -> Result<(String, Params), SqsError> {
    let mut params = Form::new();
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
    Ok((action, Params(params)))
}

/// The parameters of `action` shaped as its JSON-protocol input: numbers where it takes numbers,
/// `.N` lists as arrays, named entries as objects, batch entries as `Entries`.
pub(super) fn shape(action: SqsAction, params: &Params) -> Result<Map<String, Value>, SqsError> {
    convert(action, &params.0)
}

fn decode_into(form: &[u8], params: &mut Form) -> Result<(), SqsError> {
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
fn indexed(params: &Form, prefix: &str) -> Result<BTreeMap<u32, Form>, SqsError> {
    let mut groups: BTreeMap<u32, Form> = BTreeMap::new();
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
fn convert(action: SqsAction, params: &Form) -> Result<Map<String, Value>, SqsError> {
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
            let field = match prefix {
                "ActionName" => "Actions".to_owned(),
                _ => format!("{prefix}s"),
            };
            out.insert(field, Value::Array(items));
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
    let tags = if action == SqsAction::CreateQueue {
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

/// Writes the answer of `action` as the Query protocol's XML answer (with its
/// `<?xml version="1.0"?>` declaration, as SQS sends it).
pub(super) fn render_answer(action: SqsAction, answer: &SqsAnswer, request_id: &str) -> String {
    let action_name = action.name();
    let mut xml = Xml(format!(
        "<?xml version=\"1.0\"?><{action_name}Response xmlns=\"{XMLNS}\">"
    ));
    if !action.answers_without_result() {
        let mut inner = Xml(String::new());
        result(action, answer, &mut inner);
        if inner.0.is_empty() {
            xml.0 += &format!("<{action_name}Result/>");
        } else {
            xml.0 += &format!("<{action_name}Result>{}</{action_name}Result>", inner.0);
        }
    }
    xml.0 += "<ResponseMetadata>";
    xml.text("RequestId", request_id);
    xml.0 += &format!("</ResponseMetadata></{action_name}Response>");
    xml.0
}

/// Writes the answer of `action` as SQS answers a Query request that accepts JSON:
/// `{"<Action>Response": {"<Action>Result": {...}, "ResponseMetadata": {"RequestId": ...}}}`,
/// the result's members as the JSON protocol names them except lists, whose names start in
/// lower case (`queueUrls`, `messages`), as SQS writes them there.
pub(super) fn render_answer_json(action: SqsAction, answer: &SqsAnswer, request_id: &str) -> Value {
    let action_name = action.name();
    let mut response = Map::new();
    if !action.answers_without_result() {
        let mut result = match serde_json::to_value(answer) {
            Ok(Value::Object(members)) => members,
            _ => Map::new(),
        };
        let lists: Vec<String> = result
            .iter()
            .filter(|(_, value)| value.is_array())
            .map(|(name, _)| name.clone())
            .collect();
        for name in lists {
            if let Some(list) = result.remove(&name) {
                let mut chars = name.chars();
                let lowered: String = chars
                    .next()
                    .map(|first| first.to_ascii_lowercase())
                    .into_iter()
                    .chain(chars)
                    .collect();
                result.insert(lowered, list);
            }
        }
        response.insert(format!("{action_name}Result"), Value::Object(result));
    }
    response.insert(
        "ResponseMetadata".into(),
        json!({ "RequestId": request_id }),
    );
    json!({ format!("{action_name}Response"): response })
}

/// Whether a Query request asks for its answer in JSON (`Accept: application/json`).
pub(super) fn accepts_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|media| {
            media
                .split(';')
                .next()
                .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("application/json"))
        })
}

/// Renders an error in the Query protocol's shape, with its Query code.
pub(super) fn render_error(error: &SqsError, request_id: &str) -> String {
    let fault = if error.sender { "Sender" } else { "Receiver" };
    // The Query protocol words a missing queue as SQS's XML API always has.
    let message = if error.query_code == "AWS.SimpleQueueService.NonExistentQueue" {
        "The specified queue does not exist for this wsdl version."
    } else {
        &error.message
    };
    format!(
        "<?xml version=\"1.0\"?><ErrorResponse xmlns=\"{XMLNS}\"><Error><Type>{fault}</Type><Code>{}</Code><Message>{}</Message><Detail/></Error><RequestId>{}</RequestId></ErrorResponse>",
        escape(error.query_code),
        escape(message),
        escape(request_id)
    )
}

/// The inside of `{action}Result`.
fn result(action: SqsAction, answer: &SqsAnswer, out: &mut Xml) {
    match answer {
        SqsAnswer::Nothing(_) => {}
        SqsAnswer::QueueUrl(answer) => out.text("QueueUrl", &answer.queue_url),
        // Both lists are flattened, each member named `QueueUrl` in the Query model.
        SqsAnswer::QueueUrls(answer) => {
            for url in &answer.queue_urls {
                out.text("QueueUrl", url);
            }
            out.optional("NextToken", answer.next_token.as_deref());
        }
        SqsAnswer::DeadLetterSources(answer) => {
            for url in &answer.queue_urls {
                out.text("QueueUrl", url);
            }
        }
        SqsAnswer::Attributes(answer) => out.pairs("Attribute", "Name", &answer.attributes),
        SqsAnswer::Sent(sent) => {
            out.text("MessageId", &sent.message_id);
            out.text("MD5OfMessageBody", &sent.md5_of_message_body);
            out.optional(
                "MD5OfMessageAttributes",
                sent.md5_of_message_attributes.as_deref(),
            );
            out.optional(
                "MD5OfMessageSystemAttributes",
                sent.md5_of_message_system_attributes.as_deref(),
            );
            out.optional("SequenceNumber", sent.sequence_number.as_deref());
        }
        SqsAnswer::Batch(batch) => {
            let entry = format!("{}ResultEntry", action.name());
            for success in &batch.successful {
                out.open(&entry);
                out.text("Id", &success.id);
                out.optional("MessageId", success.message_id.as_deref());
                out.optional("MD5OfMessageBody", success.md5_of_message_body.as_deref());
                out.optional(
                    "MD5OfMessageAttributes",
                    success.md5_of_message_attributes.as_deref(),
                );
                out.optional(
                    "MD5OfMessageSystemAttributes",
                    success.md5_of_message_system_attributes.as_deref(),
                );
                out.optional("SequenceNumber", success.sequence_number.as_deref());
                out.close(&entry);
            }
            for failure in &batch.failed {
                out.open("BatchResultErrorEntry");
                out.text("Id", &failure.id);
                out.text("SenderFault", &failure.sender_fault.to_string());
                out.text("Code", &failure.code);
                out.text("Message", &failure.message);
                out.close("BatchResultErrorEntry");
            }
        }
        SqsAnswer::Received(received) => {
            for message in &received.messages {
                message_xml(out, message);
            }
        }
        SqsAnswer::Tags(tags) => out.pairs("Tag", "Key", &tags.tags),
        SqsAnswer::MoveTaskStarted(started) => out.text("TaskHandle", &started.task_handle),
        SqsAnswer::MoveTaskCancelled(cancelled) => out.text(
            "ApproximateNumberOfMessagesMoved",
            &cancelled.approximate_number_of_messages_moved.to_string(),
        ),
        SqsAnswer::MoveTasks(tasks) => {
            for task in &tasks.results {
                out.open("ListMessageMoveTasksResultEntry");
                out.optional("TaskHandle", task.task_handle.as_deref());
                out.text("Status", task.status);
                out.text("SourceArn", &task.source_arn);
                out.optional("DestinationArn", task.destination_arn.as_deref());
                out.optional(
                    "MaxNumberOfMessagesPerSecond",
                    task.max_number_of_messages_per_second
                        .map(|rate| rate.to_string())
                        .as_deref(),
                );
                out.text(
                    "ApproximateNumberOfMessagesMoved",
                    &task.approximate_number_of_messages_moved.to_string(),
                );
                out.optional(
                    "ApproximateNumberOfMessagesToMove",
                    task.approximate_number_of_messages_to_move
                        .map(|count| count.to_string())
                        .as_deref(),
                );
                out.optional("FailureReason", task.failure_reason.as_deref());
                out.text("StartedTimestamp", &task.started_timestamp.to_string());
                out.close("ListMessageMoveTasksResultEntry");
            }
        }
    }
}

/// One received message as `<Message>`.
fn message_xml(out: &mut Xml, message: &MessageJson) {
    out.open("Message");
    out.text("MessageId", &message.message_id);
    out.text("ReceiptHandle", &message.receipt_handle);
    out.text("MD5OfBody", &message.md5_of_body);
    out.text("Body", &message.body);
    out.pairs("Attribute", "Name", &message.attributes);
    out.optional(
        "MD5OfMessageAttributes",
        message.md5_of_message_attributes.as_deref(),
    );
    for (name, attribute) in &message.message_attributes {
        out.open("MessageAttribute");
        out.text("Name", name);
        out.open("Value");
        out.text("DataType", &attribute.data_type);
        out.optional("StringValue", attribute.string_value.as_deref());
        out.optional("BinaryValue", attribute.binary_value.as_deref());
        out.close("Value");
        out.close("MessageAttribute");
    }
    out.close("Message");
}

/// XML written element by element; element names are the protocol's, text is escaped.
struct Xml(String);

impl Xml {
    fn open(&mut self, name: &str) {
        self.0 += &format!("<{name}>");
    }

    fn close(&mut self, name: &str) {
        self.0 += &format!("</{name}>");
    }

    /// `<name>text</name>`.
    fn text(&mut self, name: &str, text: &str) {
        self.0 += &format!("<{name}>{}</{name}>", escape(text));
    }

    /// `<name>text</name>` when there is a text, nothing otherwise.
    fn optional(&mut self, name: &str, text: Option<&str>) {
        if let Some(text) = text {
            self.text(name, text);
        }
    }

    /// A map as repeated `<element><{key}>k</{key}><Value>v</Value></element>`.
    fn pairs(&mut self, element: &str, key: &str, map: &BTreeMap<String, String>) {
        for (name, value) in map {
            self.open(element);
            self.text(key, name);
            self.text("Value", value);
            self.close(element);
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

    /// A form read and shaped as its action's JSON input.
    fn shaped(form: &[u8], query: Option<&str>) -> Result<(String, Value), SqsError> {
        let (name, params) = parse_form(form, query)?;
        let action = SqsAction::named(&name).expect("a known action");
        Ok((name, Value::Object(shape(action, &params)?)))
    }

    #[test]
    fn send_message_form_becomes_json() {
        let form = "Action=SendMessage&Version=2012-11-05&QueueUrl=http%3A%2F%2Flocalhost%2F000000000000%2Forders\
            &MessageBody=hello+world&DelaySeconds=5\
            &MessageAttribute.2.Name=blob&MessageAttribute.2.Value.DataType=Binary&MessageAttribute.2.Value.BinaryValue=AAE%2B\
            &MessageAttribute.1.Name=kind&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=order";
        let (action, request) = shaped(form.as_bytes(), None).unwrap();
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
        let (_, request) = shaped(form.as_bytes(), None).unwrap();
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
        let (action, request) = shaped(form.as_bytes(), Some("Action=ReceiveMessage")).unwrap();
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
        let bad = shaped(b"Action=ReceiveMessage&MaxNumberOfMessages=ten", None).unwrap_err();
        assert_eq!(bad.code, "InvalidParameterValue");
    }

    #[test]
    fn form_decoding_handles_plus_and_percent() {
        let form = b"Action=SendMessage&MessageBody=a+b%20c%2Bd%E2%82%AC%&ReceiptHandle";
        let (_, request) = shaped(form, None).unwrap();
        assert_eq!(
            request,
            json!({"MessageBody": "a b c+d\u{20ac}%", "ReceiptHandle": ""})
        );
        assert!(shaped(b"Action=SendMessage&MessageBody=%FF", None).is_err());
    }

    #[test]
    fn a_parameter_given_twice_is_refused() {
        let twice = shaped(b"Action=DeleteQueue&QueueUrl=q", Some("Action=GetQueueUrl"));
        assert_eq!(twice.unwrap_err().code, "InvalidParameterValue");
        let twice = shaped(b"Action=SendMessage&MessageBody=a&MessageBody=b", None);
        assert_eq!(twice.unwrap_err().code, "InvalidParameterValue");
    }

    #[test]
    fn missing_action_is_refused() {
        let error = shaped(b"QueueUrl=q", Some("Version=2012-11-05")).unwrap_err();
        assert_eq!(error.code, "MissingAction");
        assert_eq!(error.query_code, "MissingAction");
        assert!(error.sender);
    }

    #[test]
    fn receive_message_answer_renders_like_sqs() {
        let message = MessageJson {
            message_id: "m-1".into(),
            receipt_handle: "rh+1/=".into(),
            md5_of_body: "body-md5".into(),
            body: "a & <b>".into(),
            attributes: [("SenderId".to_owned(), "000000000000".to_owned())].into(),
            md5_of_message_attributes: Some("attr-md5".into()),
            message_attributes: [(
                "kind".to_owned(),
                super::super::wire::AttributeJson {
                    data_type: "String".into(),
                    string_value: Some("order".into()),
                    binary_value: None,
                },
            )]
            .into(),
        };
        let answer = SqsAnswer::Received(super::super::answers::Received {
            messages: vec![message],
        });
        let expected = format!(
            "{HEAD}<ReceiveMessageResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\"><ReceiveMessageResult><Message>\
            <MessageId>m-1</MessageId><ReceiptHandle>rh+1/=</ReceiptHandle><MD5OfBody>body-md5</MD5OfBody>\
            <Body>a &amp; &lt;b&gt;</Body><Attribute><Name>SenderId</Name><Value>000000000000</Value></Attribute>\
            <MD5OfMessageAttributes>attr-md5</MD5OfMessageAttributes><MessageAttribute><Name>kind</Name>\
            <Value><DataType>String</DataType><StringValue>order</StringValue></Value></MessageAttribute>\
            </Message></ReceiveMessageResult><ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata>\
            </ReceiveMessageResponse>"
        );
        assert_eq!(
            render_answer(SqsAction::ReceiveMessage, &answer, "req-1"),
            expected
        );
    }

    #[test]
    fn empty_answers_have_no_result_element() {
        assert_eq!(
            render_answer(SqsAction::DeleteMessage, &SqsAnswer::nothing(), "req-2"),
            format!(
                "{HEAD}<DeleteMessageResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\">\
                <ResponseMetadata><RequestId>req-2</RequestId></ResponseMetadata></DeleteMessageResponse>"
            )
        );
    }

    #[test]
    fn an_answer_with_nothing_in_it_has_an_empty_result_element() {
        let none = SqsAnswer::Received(super::super::answers::Received { messages: vec![] });
        assert!(
            render_answer(SqsAction::ReceiveMessage, &none, "r")
                .contains("<ReceiveMessageResult/><ResponseMetadata>")
        );
        assert_eq!(serde_json::to_string(&none).unwrap(), "{}");
    }

    #[test]
    fn errors_render_with_their_query_code() {
        assert_eq!(
            render_error(&SqsError::queue_does_not_exist(), "req-3"),
            format!(
                "{HEAD}<ErrorResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\"><Error><Type>Sender</Type>\
                <Code>AWS.SimpleQueueService.NonExistentQueue</Code><Message>The specified queue does not exist for this wsdl version.</Message>\
                <Detail/></Error><RequestId>req-3</RequestId></ErrorResponse>"
            )
        );
    }
}
