//! Splitting an output buffer between the calling thread and persistent helper threads.
//!
//! The caller never waits for a helper to start: it takes pieces of work from a shared cursor
//! until none is left, and waits only for pieces a helper has already begun. A helper that was
//! descheduled (a busy machine) therefore costs nothing, where a barrier would stall every
//! operation until it ran again. Helpers spin briefly between operations, then park.
//!
//! On a machine whose other cores are busy, helpers fall behind: the caller ends up doing
//! nearly every piece itself while paying for the hand-offs, and a helper preempted in the
//! middle of its piece holds the caller up for as long as the scheduler keeps it off the CPU.
//! When the caller did more than [`BUSY_SHARE`] of the pieces over a window of operations, the
//! pool runs on the caller alone for [`SOLO`] and then tries its helpers again. A single long
//! wait is not enough: helpers are preempted now and then even on a quiet machine, and going
//! solo for each of those costs more than the waits.

use std::any::Any;
use std::ops::Range;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// Work pieces per thread: enough to even out a slow thread, few enough to be cheap.
const PIECES_PER_THREAD: usize = 4;

/// Spins of an idle helper before it parks (tens of microseconds).
const SPINS: u32 = 20_000;

/// Operations over which the caller's share of the pieces is judged.
const WINDOW: u64 = 128;

/// The caller's share of the pieces, in percent, above which the helpers are not keeping up
/// (with two threads on a quiet machine it is about half).
const BUSY_SHARE: u64 = 85;

/// How long the pool runs on the caller alone once its helpers fell behind.
const SOLO: Duration = Duration::from_millis(200);

/// The caller's piece loop as the helpers see it: the address of the closure on the caller's
/// stack and the function that calls a closure of its type. Neither carries a lifetime: the
/// closure outlives every call because of the `active`/`closed` protocol of [`Job::run`] (the
/// job reference of rayon-core is built the same way).
struct Work {
    data: *const (),
    call: unsafe fn(*const ()) -> usize,
}

impl Work {
    fn new<W: Fn() -> usize + Sync>(work: &W) -> Self {
        Work {
            data: std::ptr::from_ref(work).cast(),
            call: call_work::<W>,
        }
    }
}

/// Calls the closure at `data`.
///
/// # Safety
///
/// `data` must come from [`Work::new`] with the same `W`, and that closure must still be alive.
#[allow(unsafe_code)]
unsafe fn call_work<W: Fn() -> usize + Sync>(data: *const ()) -> usize {
    // SAFETY: the caller guarantees that `data` points to a live `W`; `W: Sync` makes a shared
    // call from this thread sound.
    let work = unsafe { &*data.cast::<W>() };
    work()
}

/// One parallel operation, as seen by the helpers.
struct Job {
    /// Only called while `closed` is false and the caller waits on `active` (see [`Job::run`]).
    work: Work,
    /// Helpers currently inside `work`.
    active: AtomicUsize,
    /// Set by the caller once every piece is done: from then on `work` may dangle.
    closed: AtomicBool,
    /// The payload of a panic in a helper's share of the work, for the caller to resume.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

// SAFETY: `work` points to a `Sync` closure, called from several threads only under the
// `active`/`closed` protocol of `Job::run`, which keeps it alive for every call.
#[allow(unsafe_code)]
unsafe impl Send for Job {}
// SAFETY: as above; the other fields are atomics and a mutex.
#[allow(unsafe_code)]
unsafe impl Sync for Job {}

impl Job {
    /// Runs the work from a helper, unless the caller has already closed the job.
    #[allow(unsafe_code)]
    fn run(&self) {
        self.active.fetch_add(1, Ordering::SeqCst);
        if !self.closed.load(Ordering::SeqCst) {
            let Work { data, call } = self.work;
            // SAFETY: `active` was raised before `closed` was read as false (both SeqCst), so
            // the caller's `closed` store comes later in the single total order, and its
            // following wait sees `active > 0` until this call returns: the closure, on the
            // caller's stack, is alive throughout, and `call` was made for its type.
            let work = || unsafe { call(data) };
            // A panic must not leave `active` raised (the caller would wait forever); the caller
            // resumes it once the job is closed.
            if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
                let mut slot = self.panic.lock().unwrap_or_else(|e| e.into_inner());
                slot.get_or_insert(payload);
            }
        }
        self.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The helpers and the job they should join.
struct Pool {
    current: Mutex<Option<Arc<Job>>>,
    generation: AtomicUsize,
    helpers: OnceLock<Vec<Thread>>,
    /// The pool's time origin.
    epoch: Instant,
    /// Until when (nanoseconds since `epoch`) operations run on the caller alone.
    solo_until: AtomicU64,
    /// Operations, pieces and pieces done by the caller in the current window.
    window: [AtomicU64; 3],
}

impl Pool {
    fn new() -> Self {
        Pool {
            current: Mutex::new(None),
            generation: AtomicUsize::new(0),
            helpers: OnceLock::new(),
            epoch: Instant::now(),
            solo_until: AtomicU64::new(0),
            window: Default::default(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn solo(&self) -> bool {
        self.now() < self.solo_until.load(Ordering::Relaxed)
    }

    fn go_solo(&self) {
        let until = self
            .now()
            .saturating_add(u64::try_from(SOLO.as_nanos()).unwrap_or(0));
        self.solo_until.store(until, Ordering::Relaxed);
    }

    /// Records one operation: its pieces, and those the caller did.
    fn record(&self, pieces: usize, mine: usize) {
        let [ops, all, by_caller] = &self.window;
        all.fetch_add(pieces as u64, Ordering::Relaxed);
        by_caller.fetch_add(mine as u64, Ordering::Relaxed);
        if ops.fetch_add(1, Ordering::Relaxed) + 1 >= WINDOW {
            let (all, by_caller) = (
                all.swap(0, Ordering::Relaxed),
                by_caller.swap(0, Ordering::Relaxed),
            );
            ops.store(0, Ordering::Relaxed);
            if by_caller * 100 > all * BUSY_SHARE {
                self.go_solo();
            }
        }
    }
}

/// The inference threads (the caller and its helpers): `CANDLE_NUM_THREADS`, else
/// `RAYON_NUM_THREADS`, else all cores. The pool is process-wide and created on first use.
pub fn inference_threads() -> usize {
    std::env::var("CANDLE_NUM_THREADS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(candle_core::utils::get_num_threads)
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<&'static Pool> = OnceLock::new();
    POOL.get_or_init(|| spawn_pool(inference_threads().saturating_sub(1)))
}

/// A pool with `n` helper threads, which live as long as the process.
fn spawn_pool(n: usize) -> &'static Pool {
    let pool: &'static Pool = Box::leak(Box::new(Pool::new()));
    let helpers = (0..n)
        .filter_map(|i| {
            std::thread::Builder::new()
                .name(format!("corrigible-helper-{i}"))
                .spawn(move || helper(pool))
                .ok()
                .map(|h| h.thread().clone())
        })
        .collect();
    let _ = pool.helpers.set(helpers);
    pool
}

fn helper(pool: &'static Pool) {
    let mut seen = pool.generation.load(Ordering::Acquire);
    loop {
        let mut spins = 0;
        while pool.generation.load(Ordering::Acquire) == seen {
            spins += 1;
            if spins < SPINS {
                std::hint::spin_loop();
            } else {
                std::thread::park();
                spins = 0;
            }
        }
        seen = pool.generation.load(Ordering::Acquire);
        let job = pool
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(job) = job {
            job.run();
        }
    }
}

fn helpers(pool: &Pool) -> &[Thread] {
    pool.helpers.get().map_or(&[], Vec::as_slice)
}

/// Runs `f(items, out_piece)` over `out`, seen as `n_items` items of `item_len` values each,
/// split into pieces of whole multiples of `align` items and shared among the threads.
///
/// `out` must hold `n_items * item_len` values; otherwise nothing runs.
pub fn for_each_piece<T, F>(out: &mut [T], n_items: usize, item_len: usize, align: usize, f: F)
where
    T: Send,
    F: Fn(Range<usize>, &mut [T]) + Sync,
{
    for_each_piece_on(pool(), out, n_items, item_len, align, f);
}

/// [`for_each_piece`] on the threads of `pool`.
fn for_each_piece_on<T, F>(
    pool: &'static Pool,
    out: &mut [T],
    n_items: usize,
    item_len: usize,
    align: usize,
    f: F,
) where
    T: Send,
    F: Fn(Range<usize>, &mut [T]) + Sync,
{
    if out.len() != n_items * item_len || n_items == 0 {
        return;
    }
    let Some(per_piece) = piece_items(pool, n_items, align) else {
        f(0..n_items, out);
        return;
    };
    let pieces = out
        .chunks_mut(per_piece * item_len.max(1))
        .enumerate()
        .map(|(i, chunk)| {
            let start = i * per_piece;
            (start..(start + per_piece).min(n_items), chunk)
        })
        .collect();
    run_pieces(pool, pieces, |items, chunk| f(items, chunk));
}

/// A pool of threads to share work on: the process's own, or in tests one with helpers
/// whatever `CANDLE_NUM_THREADS` says.
#[derive(Clone, Copy)]
pub struct Threads(&'static Pool);

impl Threads {
    /// The process's inference threads ([`inference_threads`]).
    pub fn shared() -> Self {
        Threads(pool())
    }

    /// The caller and two helpers (CI sets `CANDLE_NUM_THREADS` to 1).
    #[cfg(test)]
    pub fn helped() -> Self {
        static POOL: OnceLock<&'static Pool> = OnceLock::new();
        Threads(POOL.get_or_init(|| spawn_pool(2)))
    }

    /// Runs `f(columns, slices)` over `out`, seen as `rows` rows of `n_columns` values each,
    /// split by columns into pieces of whole multiples of `align` columns shared among the
    /// threads: `slices[r]` is the piece's part of row `r`, columns `columns`.
    ///
    /// `out` must hold `rows * n_columns` values; otherwise nothing runs.
    pub fn for_each_column_piece<F>(
        self,
        out: &mut [f32],
        rows: usize,
        n_columns: usize,
        align: usize,
        f: F,
    ) where
        F: Fn(Range<usize>, &mut [&mut [f32]]) + Sync,
    {
        if out.len() != rows * n_columns || n_columns == 0 || rows == 0 {
            return;
        }
        let per_piece = piece_items(self.0, n_columns, align).unwrap_or(n_columns);
        let n_pieces = n_columns.div_ceil(per_piece);
        let mut pieces: Vec<(Range<usize>, Vec<&mut [f32]>)> = (0..n_pieces)
            .map(|i| {
                let start = i * per_piece;
                (
                    start..(start + per_piece).min(n_columns),
                    Vec::with_capacity(rows),
                )
            })
            .collect();
        for row in out.chunks_exact_mut(n_columns) {
            for (piece, part) in pieces.iter_mut().zip(row.chunks_mut(per_piece)) {
                piece.1.push(part);
            }
        }
        if let [(columns, slices)] = &mut pieces[..] {
            f(columns.clone(), slices);
            return;
        }
        run_pieces(self.0, pieces, |columns, slices| f(columns, slices));
    }
}

/// Items per piece when `n_items` items are shared among the threads of `pool` in multiples
/// of `align`; `None` when the caller should do them all at once.
fn piece_items(pool: &Pool, n_items: usize, align: usize) -> Option<usize> {
    let align = align.max(1);
    let threads = helpers(pool).len() + 1;
    let units = n_items.div_ceil(align);
    if threads == 1 || units < 2 || pool.solo() {
        return None;
    }
    Some(units.div_ceil(threads * PIECES_PER_THREAD).max(1) * align)
}

/// Runs `f` on every piece, each taken by exactly one thread of `pool`.
fn run_pieces<P: Send>(
    pool: &'static Pool,
    pieces: Vec<(Range<usize>, P)>,
    f: impl Fn(Range<usize>, &mut P) + Sync,
) {
    let pieces: Vec<Mutex<(Range<usize>, P)>> = pieces.into_iter().map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = 0;
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(piece) = pieces.get(i) else {
                break done;
            };
            // Each piece is taken by exactly one thread, so the lock is never contended; a
            // poisoned lock (a panic in `f` elsewhere) still holds valid data.
            let mut guard = piece.lock().unwrap_or_else(|e| e.into_inner());
            let (items, part) = &mut *guard;
            f(items.clone(), part);
            done += 1;
        }
    };
    run_shared(pool, &work, pieces.len());
}

/// Closes a job when dropped, then waits until no helper is inside its work: the borrow the
/// work holds ends only after that, on return and on unwinding alike.
struct Closing<'a>(&'a Job);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::SeqCst);
        while self.0.active.load(Ordering::SeqCst) != 0 {
            std::hint::spin_loop();
        }
    }
}

/// Publishes `work` to the helpers, runs it on this thread, then waits for helpers inside it.
fn run_shared<W: Fn() -> usize + Sync>(pool: &'static Pool, work: &W, pieces: usize) {
    let job = Arc::new(Job {
        work: Work::new(work),
        active: AtomicUsize::new(0),
        closed: AtomicBool::new(false),
        panic: Mutex::new(None),
    });
    let closing = Closing(&job);
    *pool.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&job));
    pool.generation.fetch_add(1, Ordering::Release);
    for h in helpers(pool) {
        h.unpark();
    }
    let mine = work();
    drop(closing);
    pool.record(pieces, mine);
    // Drop the pool's reference so that the slot does not keep a stale job reachable.
    {
        let mut current = pool.current.lock().unwrap_or_else(|e| e.into_inner());
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, &job)) {
            *current = None;
        }
    }
    let helper_panic = job.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(payload) = helper_panic {
        std::panic::resume_unwind(payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_left_alone_goes_solo_for_a_while() {
        let pool = Pool::new();
        for _ in 0..WINDOW {
            pool.record(8, 4);
        }
        assert!(!pool.solo());
        for _ in 0..WINDOW - 1 {
            pool.record(8, 8);
        }
        assert!(!pool.solo(), "judged only at the end of a window");
        pool.record(8, 8);
        assert!(pool.solo());
        std::thread::sleep(SOLO);
        assert!(!pool.solo());
    }

    fn helped() -> &'static Pool {
        Threads::helped().0
    }

    #[test]
    fn column_pieces_cover_every_row_once_in_whole_multiples() {
        for (rows, n_columns, align) in [(3, 150, 16), (7, 33, 4), (1, 5, 1), (4, 16, 16)] {
            let mut out = vec![0f32; rows * n_columns];
            Threads::helped().for_each_column_piece(
                &mut out,
                rows,
                n_columns,
                align,
                |columns, slices| {
                    assert!(columns.start.is_multiple_of(align), "{columns:?}");
                    assert_eq!(slices.len(), rows);
                    for (r, slice) in slices.iter_mut().enumerate() {
                        assert_eq!(slice.len(), columns.len());
                        for (c, v) in columns.clone().zip(slice.iter_mut()) {
                            *v += (r * 1000 + c) as f32;
                        }
                    }
                },
            );
            for r in 0..rows {
                for c in 0..n_columns {
                    assert_eq!(out[r * n_columns + c], (r * 1000 + c) as f32, "{r},{c}");
                }
            }
        }
        let mut untouched = vec![-1f32; 6];
        Threads::helped().for_each_column_piece(&mut untouched, 2, 4, 1, |_, _| panic!("ran"));
        assert_eq!(untouched, [-1.0; 6]);
    }

    #[test]
    fn a_panic_in_the_work_reaches_the_caller_and_leaves_the_pool_working() {
        let caught = std::panic::catch_unwind(|| {
            let mut out = vec![0f32; 64];
            for_each_piece_on(helped(), &mut out, 64, 1, 1, |items, _| {
                assert!(items.start != 0, "a piece that fails");
            });
        });
        assert!(caught.is_err());
        let mut out = vec![0f32; 64];
        for_each_piece_on(helped(), &mut out, 64, 1, 1, |_, piece| piece.fill(1.0));
        assert!(out.iter().all(|&v| v == 1.0));
    }

    #[test]
    fn every_item_is_visited_once() {
        for _ in 0..50 {
            let mut out = vec![0f32; 103 * 3];
            for_each_piece_on(helped(), &mut out, 103, 3, 4, |items, piece| {
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
}
