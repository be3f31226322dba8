//! Continuous batching: one model shared by many runners, on a thread of its own. Each forward
//! pass takes the step of every runner waiting, so the weights are read once for all of them;
//! a runner that starts joins at the next pass, one that ends leaves without stopping the rest.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use corrigible_llama::{Llama, Sequence, Step};

use crate::error::LocalError;

/// How long a pass waits for the runners in the middle of a generation to send their next
/// step, once at least one has: long enough for a runner to pick its token and mask the next
/// logits, short enough that one runner alone never waits on it.
const GATHER: Duration = Duration::from_millis(2);

/// Most prompt tokens of one runner fed in a pass while other runners generate, so that a long
/// prompt does not stall every runner decoding beside it.
pub const SHARED_PREFILL_CHUNK: usize = 64;

/// One runner's step, waiting for a pass.
struct Job {
    sequence: Sequence,
    tokens: Vec<u32>,
    reply: SyncSender<Done>,
}

/// A step's result: the sequence back, with the logits after its last token.
struct Done {
    sequence: Sequence,
    logits: Result<Vec<f32>, String>,
}

/// A handle on the shared model: cloned into every runner.
#[derive(Clone)]
pub struct Batcher {
    llama: Arc<Mutex<Llama>>,
    jobs: Sender<Job>,
    generating: Arc<AtomicUsize>,
    counts: Arc<Counts>,
    context_length: usize,
}

/// Passes run and steps taken since the start, the steps of every sequence counted.
#[derive(Debug, Default)]
struct Counts {
    passes: AtomicU64,
    steps: AtomicU64,
}

/// How much the passes were shared: steps over passes is the mean batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchCounts {
    /// Forward passes run.
    pub passes: u64,
    /// Sequences' steps those passes took.
    pub steps: u64,
}

impl Batcher {
    /// Moves `llama` to a thread of its own that runs the passes, and returns the handle.
    pub fn start(llama: Llama) -> Result<Self, LocalError> {
        let context_length = llama.hyper().context_length;
        let llama = Arc::new(Mutex::new(llama));
        let generating = Arc::new(AtomicUsize::new(0));
        let counts = Arc::new(Counts::default());
        let (jobs, rx) = mpsc::channel();
        let (model, waiting, counted) = (llama.clone(), generating.clone(), counts.clone());
        std::thread::Builder::new()
            .name("corrigible-batcher".into())
            .spawn(move || run_passes(&model, &rx, &waiting, &counted))
            .map_err(|e| LocalError::Inference(format!("cannot start the batching thread: {e}")))?;
        Ok(Self {
            llama,
            jobs,
            generating,
            counts,
            context_length,
        })
    }

    /// Passes run and steps taken so far.
    pub fn counts(&self) -> BatchCounts {
        BatchCounts {
            passes: self.counts.passes.load(Ordering::Relaxed),
            steps: self.counts.steps.load(Ordering::Relaxed),
        }
    }

    /// The model's context window.
    pub fn context_length(&self) -> usize {
        self.context_length
    }

    /// The model itself, between passes (to make a sequence, or load or save one's cache).
    pub fn model(&self) -> MutexGuard<'_, Llama> {
        self.llama.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Feeds `tokens` to `sequence` in the next pass and returns the logits after the last
    /// one. The sequence is moved to the pass and back; on an error it comes back unchanged.
    pub fn forward(&self, sequence: &mut Sequence, tokens: &[u32]) -> Result<Vec<f32>, LocalError> {
        let (reply, done) = mpsc::sync_channel(1);
        let job = Job {
            sequence: std::mem::take(sequence),
            tokens: tokens.to_vec(),
            reply,
        };
        if let Err(mpsc::SendError(job)) = self.jobs.send(job) {
            *sequence = job.sequence;
            return Err(LocalError::Inference(
                "the batching thread has stopped".into(),
            ));
        }
        let done = done
            .recv()
            .map_err(|_| LocalError::Inference("the batching thread has stopped".into()))?;
        *sequence = done.sequence;
        done.logits.map_err(LocalError::Inference)
    }

    /// Runners in the middle of a generation now.
    pub fn generating_now(&self) -> usize {
        self.generating.load(Ordering::SeqCst)
    }

    /// Counts a runner as generating until the guard drops: a pass waits up to [`GATHER`]
    /// for the steps of the runners counted.
    pub fn generating(&self) -> Generating {
        self.generating.fetch_add(1, Ordering::SeqCst);
        Generating(self.generating.clone())
    }
}

/// A runner in the middle of a generation, counted while held.
pub struct Generating(Arc<AtomicUsize>);

impl Drop for Generating {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The batching thread: waits for a step, gathers the others, runs them in one pass, replies
/// to each. Ends when every handle is gone.
fn run_passes(llama: &Mutex<Llama>, rx: &Receiver<Job>, generating: &AtomicUsize, counts: &Counts) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        let deadline = Instant::now() + GATHER;
        loop {
            while let Ok(job) = rx.try_recv() {
                jobs.push(job);
            }
            if jobs.len() >= generating.load(Ordering::SeqCst) {
                break;
            }
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(job) => jobs.push(job),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        counts.passes.fetch_add(1, Ordering::Relaxed);
        counts.steps.fetch_add(jobs.len() as u64, Ordering::Relaxed);
        let mut model = llama.lock().unwrap_or_else(|p| p.into_inner());
        let vocab = model.vocab_size();
        let mut steps: Vec<Step<'_>> = jobs
            .iter_mut()
            .map(|job| Step {
                sequence: &mut job.sequence,
                tokens: &job.tokens,
            })
            .collect();
        let together = model
            .forward_batch(&mut steps)
            .map(|all| all.chunks_exact(vocab).map(|l| Ok(l.to_vec())).collect());
        drop(steps);
        let results: Vec<Result<Vec<f32>, String>> = match together {
            Ok(each) => each,
            // A step the pass refuses (none is changed) fails alone: the others run again.
            Err(_) => jobs
                .iter_mut()
                .map(|job| {
                    model
                        .forward_batch(&mut [Step {
                            sequence: &mut job.sequence,
                            tokens: &job.tokens,
                        }])
                        .map(<[f32]>::to_vec)
                        .map_err(|e| e.to_string())
                })
                .collect(),
        };
        drop(model);
        for (job, logits) in jobs.into_iter().zip(results) {
            let _ = job.reply.send(Done {
                sequence: job.sequence,
                logits,
            });
        }
    }
}
