//! One trace context per message, in the two forms a queue meets: AWS X-Ray's `AWSTraceHeader`
//! (`Root=1-{8 hex}-{24 hex};Parent={16 hex};Sampled={0|1}`) and W3C Trace Context's
//! `traceparent` (`00-{32 hex}-{16 hex}-{2 hex}`) with its `tracestate`, each read and written as
//! the other, so a producer traced either way is continued by a consumer of either kind.
//!
//! A message's context is its `AWSTraceHeader` system attribute, else its `traceparent` (and
//! `tracestate`) message attributes as a W3C producer instrumentation puts them; a context
//! without a parent (an X-Ray root alone) or with an all-zero id is none.

use crate::core::model::{AttributeValue, BackendMessage, OutgoingMessage};

/// A trace context: the trace, the producer's span, and whether it was sampled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// 32 lowercase hex digits, not all zero.
    trace_id: String,
    /// 16 lowercase hex digits, not all zero.
    parent_id: String,
    sampled: bool,
    /// The W3C `tracestate`, carried as it came (X-Ray has none).
    state: Option<String>,
}

/// The longest `tracestate` carried (the W3C limit is 32 members; 512 bytes is what
/// implementations must propagate at least).
const MAX_STATE: usize = 512;

impl TraceContext {
    /// The context of a message: its `AWSTraceHeader`, else its `traceparent`/`tracestate`
    /// string attributes.
    pub fn of_message(message: &BackendMessage) -> Option<Self> {
        if let Some(context) = message.trace_header.as_deref().and_then(Self::from_xray) {
            return Some(context);
        }
        let text = |name: &str| match message.attributes.get(name).map(|a| &a.value) {
            Some(AttributeValue::Text(text)) => Some(text.as_str()),
            _ => None,
        };
        Self::from_w3c(text("traceparent")?, text("tracestate"))
    }

    /// The W3C `traceparent` and `tracestate` of a message's context, as the REST receives show
    /// them beside each message's documented fields (none when it has no context).
    pub fn w3c_of(message: &BackendMessage) -> (Option<String>, Option<String>) {
        match Self::of_message(message) {
            Some(context) => (Some(context.traceparent()), context.state),
            None => (None, None),
        }
    }

    /// Gives a message sent through a REST API the sending request's W3C context (kept as its
    /// `AWSTraceHeader`, which also travels through SQS), unless the message carries its own (a
    /// trace header, or a `traceparent` attribute).
    pub fn carry_request_context(message: &mut OutgoingMessage, traceparent: Option<&str>) {
        if message.trace_header.is_some() || message.attributes.contains_key("traceparent") {
            return;
        }
        message.trace_header = traceparent
            .and_then(|traceparent| Self::from_w3c(traceparent, None))
            .map(|context| context.xray());
    }

    /// Reads an X-Ray trace header (fields in any order, unknown ones ignored).
    pub fn from_xray(header: &str) -> Option<Self> {
        let (mut root, mut parent, mut sampled) = (None, None, false);
        for field in header.split(';') {
            let Some((key, value)) = field.trim().split_once('=') else {
                continue;
            };
            match key {
                "Root" => root = Some(value),
                "Parent" => parent = Some(value),
                "Sampled" => sampled = value == "1",
                _ => {}
            }
        }
        let root = root?.strip_prefix("1-")?;
        let (time, unique) = root.split_once('-')?;
        if time.len() != 8 || unique.len() != 24 {
            return None;
        }
        Self::valid(format!("{time}{unique}"), parent?.to_owned(), sampled, None)
    }

    /// Reads a W3C `traceparent` (version 00, or a later version's first four fields) and its
    /// `tracestate`.
    pub fn from_w3c(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let mut fields = traceparent.trim().split('-');
        let version = fields.next()?;
        let (trace_id, parent_id, flags) = (fields.next()?, fields.next()?, fields.next()?);
        let exact = version == "00" && fields.next().is_none();
        let later = version != "ff" && is_hex(version, 2) && version != "00";
        if !(exact || later) || !is_hex(flags, 2) {
            return None;
        }
        let sampled = u8::from_str_radix(flags, 16).ok()? & 1 == 1;
        let state = tracestate
            .map(str::trim)
            .filter(|state| {
                !state.is_empty()
                    && state.len() <= MAX_STATE
                    && state.bytes().all(|b| (0x20..=0x7e).contains(&b))
            })
            .map(str::to_owned);
        Self::valid(trace_id.to_owned(), parent_id.to_owned(), sampled, state)
    }

    fn valid(
        trace_id: String,
        parent_id: String,
        sampled: bool,
        state: Option<String>,
    ) -> Option<Self> {
        let nonzero = |id: &str| id.bytes().any(|b| b != b'0');
        (is_hex(&trace_id, 32)
            && is_hex(&parent_id, 16)
            && nonzero(&trace_id)
            && nonzero(&parent_id))
        .then(|| Self {
            trace_id: trace_id.to_ascii_lowercase(),
            parent_id: parent_id.to_ascii_lowercase(),
            sampled,
            state,
        })
    }

    /// As a W3C `traceparent`.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{}",
            self.trace_id,
            self.parent_id,
            if self.sampled { "01" } else { "00" }
        )
    }

    /// The W3C `tracestate` it carries, if any.
    pub fn tracestate(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// As OpenTelemetry's context of a remote span: what a span continuing it has as its parent,
    /// or links to.
    pub fn remote_span_context(&self) -> opentelemetry::trace::SpanContext {
        use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
        SpanContext::new(
            TraceId::from_hex(&self.trace_id).unwrap_or(TraceId::INVALID),
            SpanId::from_hex(&self.parent_id).unwrap_or(SpanId::INVALID),
            if self.sampled {
                TraceFlags::SAMPLED
            } else {
                TraceFlags::default()
            },
            true,
            self.state
                .as_deref()
                .and_then(|state| state.parse::<TraceState>().ok())
                .unwrap_or_default(),
        )
    }

    /// The context of an OpenTelemetry span, as a message or a receiver carries it (none for an
    /// invalid one).
    pub fn of_span_context(span: &opentelemetry::trace::SpanContext) -> Option<Self> {
        let state = span.trace_state().header();
        Self::valid(
            span.trace_id().to_string(),
            span.span_id().to_string(),
            span.is_sampled(),
            (!state.is_empty()).then_some(state),
        )
    }

    /// As an X-Ray trace header.
    pub fn xray(&self) -> String {
        let (time, unique) = self.trace_id.split_at(8);
        format!(
            "Root=1-{time}-{unique};Parent={};Sampled={}",
            self.parent_id,
            u8::from(self.sampled)
        )
    }
}

fn is_hex(text: &str, length: usize) -> bool {
    text.len() == length && text.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::MessageAttribute;

    const XRAY: &str = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
    const W3C: &str = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01";

    #[test]
    fn x_ray_and_w3c_translate_both_ways() {
        let context = TraceContext::from_xray(XRAY).unwrap();
        assert_eq!(context.traceparent(), W3C);
        assert_eq!(TraceContext::from_w3c(W3C, None).unwrap().xray(), XRAY);
        let unsampled = TraceContext::from_xray(&XRAY.replace("Sampled=1", "Sampled=0")).unwrap();
        assert!(unsampled.traceparent().ends_with("-00"));
        // Field order and case do not matter; a lineage field is ignored.
        let shuffled = "Sampled=1;Lineage=a87bd80c:1|68fd508a:5;Parent=53995C3F42CD8AD8;Root=1-5759E988-BD862E3FE1BE46A994272793";
        assert_eq!(
            TraceContext::from_xray(shuffled).unwrap().traceparent(),
            W3C
        );
    }

    #[test]
    fn a_context_without_a_parent_or_with_a_zero_id_is_none() {
        for bad in [
            "Root=1-5759e988-bd862e3fe1be46a994272793",
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=0000000000000000",
            "Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
            "Root=1-5759e98-bd862e3fe1be46a9942727930;Parent=53995c3f42cd8ad8",
            "Root=1-5759e988-bd862e3fe1be46a99427279z;Parent=53995c3f42cd8ad8",
            "nonsense",
            "",
        ] {
            assert_eq!(TraceContext::from_xray(bad), None, "{bad}");
        }
        for bad in [
            "00-00000000000000000000000000000000-53995c3f42cd8ad8-01",
            "00-5759e988bd862e3fe1be46a994272793-0000000000000000-01",
            "ff-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01",
            "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01-extra",
            "00-5759e988bd862e3fe1be46a99427279-53995c3f42cd8ad8-01",
            "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-1",
        ] {
            assert_eq!(TraceContext::from_w3c(bad, None), None, "{bad}");
        }
        // A later version may add fields after the four it shares with version 00.
        let later = "01-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01-more";
        assert_eq!(
            TraceContext::from_w3c(later, None).unwrap().traceparent(),
            W3C
        );
    }

    fn message(trace_header: Option<&str>, attributes: &[(&str, &str)]) -> BackendMessage {
        BackendMessage {
            message_id: "m".into(),
            backend_handle: "h".into(),
            body: "b".into(),
            attributes: attributes
                .iter()
                .map(|(name, value)| {
                    (
                        (*name).to_owned(),
                        MessageAttribute {
                            data_type: "String".into(),
                            value: AttributeValue::Text((*value).to_owned()),
                        },
                    )
                })
                .collect(),
            sent_at: None,
            first_received_at: None,
            receive_count: 1,
            group_id: None,
            sequence_number: None,
            dead_letter_source_arn: None,
            deduplication_id: None,
            trace_header: trace_header.map(str::to_owned),
        }
    }

    #[test]
    fn a_rest_send_carries_the_request_s_context_unless_the_message_has_its_own() {
        let outgoing = |attributes: &[(&str, &str)]| OutgoingMessage {
            body: "b".into(),
            attributes: message(None, attributes).attributes,
            delay_seconds: None,
            group_id: None,
            deduplication_id: None,
            trace_header: None,
        };
        let mut plain = outgoing(&[]);
        TraceContext::carry_request_context(&mut plain, Some(W3C));
        assert_eq!(plain.trace_header.as_deref(), Some(XRAY));
        let mut own = outgoing(&[("traceparent", W3C)]);
        TraceContext::carry_request_context(&mut own, Some(W3C));
        assert_eq!(own.trace_header, None, "its own attribute is its context");
        let mut bad = outgoing(&[]);
        TraceContext::carry_request_context(&mut bad, Some("00-zz"));
        assert_eq!(bad.trace_header, None);
    }

    #[test]
    fn a_message_s_context_is_its_trace_header_else_its_w3c_attributes() {
        let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
        let both = message(Some(XRAY), &[("traceparent", other), ("tracestate", "a=1")]);
        assert_eq!(
            TraceContext::of_message(&both).unwrap().traceparent(),
            W3C,
            "the header wins"
        );
        let w3c = message(None, &[("traceparent", other), ("tracestate", "a=1,b=2")]);
        let context = TraceContext::of_message(&w3c).unwrap();
        assert_eq!(context.traceparent(), other);
        assert_eq!(context.tracestate(), Some("a=1,b=2"));
        assert_eq!(TraceContext::of_message(&message(None, &[])), None);
        let broken_header = message(Some("Root=1-x"), &[("traceparent", other)]);
        assert_eq!(
            TraceContext::of_message(&broken_header)
                .unwrap()
                .traceparent(),
            other
        );
    }
}
