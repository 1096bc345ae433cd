//! Runs several futures concurrently without an async runtime: each poll polls every pending
//! future with the same context, so whatever executor drives the whole wakes us when any of
//! them can progress. [`join_bounded`] keeps at most `limit` of them started at a time, so that
//! a long list of lazy futures (neutrality's neighbours) starts work only as slots free up.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

struct JoinAll<F: Future> {
    futures: Vec<Option<Pin<Box<F>>>>,
    outputs: Vec<Option<F::Output>>,
    /// Futures at indices below this have been started (polled at least once).
    started: usize,
    /// How many futures may be started and unfinished at once.
    limit: usize,
}

impl<F: Future> Future for JoinAll<F> {
    type Output = Vec<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Sound: `JoinAll` holds its futures boxed (pinned on the heap) and is itself `Unpin`.
        let this = self.get_mut();
        loop {
            let mut active = 0;
            for (slot, out) in this.futures[..this.started]
                .iter_mut()
                .zip(this.outputs.iter_mut())
            {
                if let Some(f) = slot {
                    match f.as_mut().poll(cx) {
                        Poll::Ready(v) => {
                            *out = Some(v);
                            *slot = None;
                        }
                        Poll::Pending => active += 1,
                    }
                }
            }
            // Start as many new futures as there are free slots; poll them in the next round
            // (a future that finishes at once frees its slot again).
            let free = this.limit.saturating_sub(active);
            let n = this.futures.len();
            if free == 0 || this.started == n {
                break;
            }
            this.started = (this.started + free).min(n);
        }
        if this.futures.iter().any(Option::is_some) {
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
pub fn join_all<F: Future>(futures: Vec<F>) -> impl Future<Output = Vec<F::Output>> {
    let n = futures.len();
    join_bounded(futures, n)
}

/// Awaits every future with at most `limit` (≥ 1) of them started and unfinished at a time,
/// starting them in input order; outputs in input order. Futures are lazy, so one that is not
/// started yet has done no work (no training asked).
pub fn join_bounded<F: Future>(
    futures: Vec<F>,
    limit: usize,
) -> impl Future<Output = Vec<F::Output>> {
    let n = futures.len();
    JoinAll {
        futures: futures.into_iter().map(|f| Some(Box::pin(f))).collect(),
        outputs: (0..n).map(|_| None).collect(),
        started: 0,
        limit: limit.max(1),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::pin::pin;
    use std::task::Waker;

    use super::*;

    /// Pending on its first poll (so that it stays started), ready on the second.
    struct Yield(bool);
    impl Future for Yield {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                Poll::Ready(())
            } else {
                self.0 = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }

    #[test]
    fn bounded_join_never_runs_more_than_the_limit_and_keeps_order() {
        let running = Cell::new(0usize);
        let peak = Cell::new(0usize);
        let futures: Vec<_> = (0..7)
            .map(|i| {
                let (running, peak) = (&running, &peak);
                async move {
                    running.set(running.get() + 1);
                    peak.set(peak.get().max(running.get()));
                    Yield(false).await;
                    Yield(false).await;
                    running.set(running.get() - 1);
                    i * 10
                }
            })
            .collect();
        let mut f = pin!(join_bounded(futures, 3));
        let mut cx = Context::from_waker(Waker::noop());
        let out = loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                break v;
            }
        };
        assert_eq!(out, vec![0, 10, 20, 30, 40, 50, 60]);
        assert_eq!(peak.get(), 3);
        assert_eq!(running.get(), 0);
    }

    #[test]
    fn an_empty_join_is_ready_at_once() {
        let mut f = pin!(join_bounded(Vec::<std::future::Ready<u8>>::new(), 2));
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(f.as_mut().poll(&mut cx), Poll::Ready(vec![]));
    }
}
