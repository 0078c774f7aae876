//! What a request's work tells the layer that observes it, whichever dialect served it: the
//! operation it named, who called, and whether the caller failed to authenticate. The server
//! writes them on the request's log line, counts them, and warns of failed authentication.

use crate::core::access::Principal;
use crate::core::operation::Operation;
use std::cell::Cell;
use std::pin::Pin;
use std::task::{Context, Poll};

tokio::task_local! {
    /// The notes of the request being served.
    static NOTES: Notes;
}

/// What a request's work noted of itself so far.
#[derive(Debug, Default)]
struct Notes {
    operation: Cell<Option<Operation>>,
    refused: Cell<bool>,
}

/// What a request's work noted of itself, once it is done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Noted {
    /// The operation it named, if it got that far.
    pub operation: Option<Operation>,
    /// Whether the caller failed to authenticate.
    pub authentication_refused: bool,
}

/// Runs a request's work, answering with what it noted of itself.
///
/// A future of its own, not an `async fn`: an `async fn` keeps its argument beside the future it
/// awaits, so every waiting long poll would hold the work twice.
pub fn scoped<F: Future>(work: F) -> Scoped<F> {
    Scoped {
        scope: NOTES.scope(Notes::default(), work),
    }
}

pin_project_lite::pin_project! {
    /// A request's work in the scope that collects its notes ([`scoped`]).
    pub struct Scoped<F: Future> {
        #[pin]
        scope: tokio::task::futures::TaskLocalFuture<Notes, F>,
    }
}

impl<F: Future> Future for Scoped<F> {
    type Output = (F::Output, Noted);

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let mut scope = self.project().scope;
        let output = std::task::ready!(scope.as_mut().poll(context));
        let noted = scope
            .take_value()
            .map_or_else(Noted::default, |notes| Noted {
                operation: notes.operation.get(),
                authentication_refused: notes.refused.get(),
            });
        Poll::Ready((output, noted))
    }
}

impl Operation {
    /// Names the operation on the current span (the request's), so every log line of the request
    /// says what it did, and notes it for the request's metrics (outside a request, tools and
    /// upkeep, nothing).
    pub fn record(self) {
        tracing::Span::current().record("operation", self.name());
        let _ = NOTES.try_with(|notes| notes.operation.set(Some(self)));
    }
}

/// Notes who the caller proved to be: the request's log lines name it (`caller`).
pub fn note_caller(principal: &Principal) {
    tracing::Span::current().record("caller", tracing::field::display(principal));
}

/// Notes that the caller failed to authenticate. `kind` is the credential it tried
/// (`api_key`, `access_key`, `client`, `admin_key`) and `claimed_id` the public id it presented,
/// if any: written as `claimed` only when it has an id's shape (at most 128 letters, digits or
/// `-_.:@`), so no secret pasted in the wrong place and no control character reaches a log.
pub fn note_refused(kind: &'static str, claimed_id: Option<&str>) {
    let span = tracing::Span::current();
    span.record("caller", tracing::field::display("unauthenticated"));
    if let Some(id) = claimed_id.filter(|id| looks_like_a_public_id(id)) {
        span.record(
            "claimed",
            tracing::field::display(format_args!("{kind}:{id}")),
        );
    }
    let _ = NOTES.try_with(|notes| notes.refused.set(true));
}

/// 1 to 128 letters, digits or `-_.:@`.
fn looks_like_a_public_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'@'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_scope_answers_what_the_work_noted() {
        let ((), noted) = scoped(async {
            Operation::Receive.record();
            note_refused("api_key", Some("abc"));
        })
        .await;
        assert_eq!(
            noted,
            Noted {
                operation: Some(Operation::Receive),
                authentication_refused: true
            }
        );
        let ((), quiet) = scoped(async {}).await;
        assert_eq!(quiet, Noted::default());
        // Outside a scope, noting is harmless.
        note_refused("api_key", None);
    }

    #[test]
    fn only_id_shaped_claims_are_kept() {
        assert!(looks_like_a_public_id("AKIAIOSFODNN7EXAMPLE"));
        assert!(looks_like_a_public_id("0123abcd"));
        assert!(looks_like_a_public_id("partner-app@acme.example"));
        for bad in ["", "has space", "line\nbreak", "a/b", &"a".repeat(129)] {
            assert!(!looks_like_a_public_id(bad), "{bad:?}");
        }
    }
}
