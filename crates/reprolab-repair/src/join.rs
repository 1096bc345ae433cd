//! Runs several futures concurrently without an async runtime: each poll polls every pending
//! future with the same context, so whatever executor drives the whole wakes us when any of
//! them can progress.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

struct JoinAll<F: Future> {
    futures: Vec<Option<Pin<Box<F>>>>,
    outputs: Vec<Option<F::Output>>,
}

impl<F: Future> Future for JoinAll<F> {
    type Output = Vec<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Sound: `JoinAll` holds its futures boxed (pinned on the heap) and is itself `Unpin`.
        let this = self.get_mut();
        let mut pending = false;
        for (slot, out) in this.futures.iter_mut().zip(this.outputs.iter_mut()) {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => {
                        *out = Some(v);
                        *slot = None;
                    }
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(
                this.outputs
                    .iter_mut()
                    .map(|o| o.take().expect("each output set once"))
                    .collect(),
            )
        }
    }
}

impl<F: Future> Unpin for JoinAll<F> {}

/// Awaits every future, concurrently; outputs in input order.
pub(crate) fn join_all<F: Future>(futures: Vec<F>) -> impl Future<Output = Vec<F::Output>> {
    let n = futures.len();
    JoinAll {
        futures: futures.into_iter().map(|f| Some(Box::pin(f))).collect(),
        outputs: (0..n).map(|_| None).collect(),
    }
}
