//! Splitting an output buffer over candle's persistent barrier pool.
//!
//! The pool's workers spin briefly and then park between calls, and the calling thread takes
//! part, so one split costs a few microseconds; it is the same pool candle's own kernels use,
//! so the two never compete.

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Work pieces handed out per thread: enough to even out a slow thread, few enough to be cheap.
const PIECES_PER_THREAD: usize = 4;

/// Threads taking part in [`for_each_piece`].
pub fn threads() -> usize {
    candle_core::utils::barrier_pool().n_workers() + 1
}

/// Runs `f(items, out_piece)` over `out`, seen as `n_items` items of `item_len` values each,
/// split into pieces of whole multiples of `align` items and shared among the pool's threads.
///
/// `out` must hold `n_items * item_len` values; otherwise nothing runs.
pub fn for_each_piece<F>(out: &mut [f32], n_items: usize, item_len: usize, align: usize, f: F)
where
    F: Fn(Range<usize>, &mut [f32]) + Sync,
{
    if out.len() != n_items * item_len || n_items == 0 {
        return;
    }
    let align = align.max(1);
    let threads = threads();
    let units = n_items.div_ceil(align);
    if threads == 1 || units < 2 {
        f(0..n_items, out);
        return;
    }
    let per_piece = units.div_ceil(threads * PIECES_PER_THREAD).max(1) * align;
    let pieces: Vec<Mutex<(Range<usize>, &mut [f32])>> = out
        .chunks_mut(per_piece * item_len.max(1))
        .enumerate()
        .map(|(i, chunk)| {
            let start = i * per_piece;
            Mutex::new((start..(start + per_piece).min(n_items), chunk))
        })
        .collect();
    let next = AtomicUsize::new(0);
    candle_core::utils::barrier_pool().execute(|_| {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(piece) = pieces.get(i) else {
                break;
            };
            // Each piece is taken by exactly one thread, so the lock is never contended; a
            // poisoned lock (a panic in `f` elsewhere) still holds valid data.
            let mut guard = piece.lock().unwrap_or_else(|e| e.into_inner());
            let (items, chunk) = &mut *guard;
            f(items.clone(), chunk);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_is_visited_once() {
        let mut out = vec![0f32; 103 * 3];
        for_each_piece(&mut out, 103, 3, 4, |items, piece| {
            assert_eq!(piece.len(), items.len() * 3);
            assert_eq!(items.start % 4, 0);
            for (k, v) in piece.iter_mut().enumerate() {
                *v += (items.start * 3 + k) as f32;
            }
        });
        let want: Vec<f32> = (0..103 * 3).map(|i| i as f32).collect();
        assert_eq!(out, want);
    }
}
