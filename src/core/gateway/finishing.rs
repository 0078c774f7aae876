//! Work a request starts that must finish even if the request is dropped (its client went away,
//! or a deadline cut it): run in the request's own task, and only if that task drops it before the
//! end, spawned to finish on the gateway's task tracker.
//!
//! Such work is not spawned up front: that costs every request a task and a cross-thread wake-up
//! (tokio notifies an idle worker for the new task and again for its answer).
//! Why: docs/decisions/2026-12-02-finish-in-place.md.
//!
//! Work polled in place runs inside the request's span already; only the spawned rest needs it
//! given, so it is taken where the work is dropped (a dropped `Instrumented` request enters its
//! span while its future drops) rather than entered and left again on every poll.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio_util::task::TaskTracker;

type Work<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type OnAbandoned<T> = Box<dyn FnOnce(T) -> Work<()> + Send>;

/// `work`, polled by whoever awaits this; dropped unfinished, it is spawned and its output goes to
/// `on_abandoned` (nobody is left to take it).
pub(super) struct Finishing<T: Send + 'static> {
    rest: Option<(Work<T>, OnAbandoned<T>)>,
    tasks: TaskTracker,
}

impl<T: Send + 'static> Finishing<T> {
    pub(super) fn new<F, A, G>(tasks: &TaskTracker, work: F, on_abandoned: A) -> Self
    where
        F: Future<Output = T> + Send + 'static,
        A: FnOnce(T) -> G + Send + 'static,
        G: Future<Output = ()> + Send + 'static,
    {
        let on_abandoned: OnAbandoned<T> = Box::new(move |output| Box::pin(on_abandoned(output)));
        Self {
            rest: Some((Box::pin(work), on_abandoned)),
            tasks: tasks.clone(),
        }
    }
}

impl<T: Send + 'static> Future for Finishing<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<T> {
        let (work, _) = self
            .rest
            .as_mut()
            .expect("finished work is not polled again");
        let output = std::task::ready!(work.as_mut().poll(context));
        self.rest = None;
        Poll::Ready(output)
    }
}

impl<T: Send + 'static> Drop for Finishing<T> {
    fn drop(&mut self) {
        let Some((work, on_abandoned)) = self.rest.take() else {
            return;
        };
        // Outside a runtime (the process is ending) there is nowhere left to finish it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let rest = async move {
                let output = work.await;
                on_abandoned(output).await;
            };
            // The request's span, so what the rest logs still carries its request id.
            let rest = tracing::Instrument::instrument(rest, tracing::Span::current());
            self.tasks.spawn_on(rest, &runtime);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::sync::Notify;

    #[tokio::test]
    async fn awaited_it_answers_in_place_and_never_calls_on_abandoned() {
        let tasks = TaskTracker::new();
        let abandoned = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&abandoned);
        let answer = Finishing::new(&tasks, async { 7 }, move |_| async move {
            seen.fetch_add(1, Ordering::SeqCst);
        })
        .await;
        assert_eq!(answer, 7);
        assert!(tasks.is_empty(), "nothing was spawned");
        tasks.close();
        tasks.wait().await;
        assert_eq!(abandoned.load(Ordering::SeqCst), 0);
    }

    /// Dropped midway, the rest runs as a task of its own, in the span that was current where
    /// the work was dropped (the request's: its log lines keep the request id), and hands its
    /// output over.
    #[tokio::test]
    async fn dropped_midway_it_finishes_on_the_tracker_in_its_span_and_hands_its_output_over() {
        let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry());
        let tasks = TaskTracker::new();
        let go_on = Arc::new(Notify::new());
        let (abandoned, handed_over) = tokio::sync::oneshot::channel();
        let work = {
            let go_on = Arc::clone(&go_on);
            async move {
                go_on.notified().await;
                let span = tracing::Span::current().metadata().map(|span| span.name());
                ("released", span)
            }
        };
        let mut finishing = Finishing::new(&tasks, work, move |output| async move {
            let _ = abandoned.send(output);
        });
        // Started in place, then the caller goes away before the end.
        assert!(futures_poll_once(&mut finishing).await.is_none());
        tracing::info_span!("request").in_scope(|| drop(finishing));
        assert_eq!(tasks.len(), 1, "the rest runs as a task of its own");
        go_on.notify_one();
        assert_eq!(handed_over.await.unwrap(), ("released", Some("request")));
        tasks.close();
        tasks.wait().await;
    }

    /// Polls once; `Some` when it finished.
    async fn futures_poll_once<T: Send + 'static>(finishing: &mut Finishing<T>) -> Option<T> {
        std::future::poll_fn(|context| {
            Poll::Ready(match Pin::new(&mut *finishing).poll(context) {
                Poll::Ready(output) => Some(output),
                Poll::Pending => None,
            })
        })
        .await
    }
}
