//! Several sequences decoded in one forward pass give, token for token, what each gives alone:
//! sequences join while others decode (their prompts pre-filled in the same pass) and leave
//! when done, on both embedded models.

mod common;

use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file;

use corrigible_llama::{Llama, MappedFile, Sequence, Step, Weights, load};
use corrigible_local::{
    LocalConfig, LocalError, LocalModel, SMALL_MODEL, Tokenizer, local_model_path,
};

/// Prompts of different lengths, so that the sequences sit at different positions.
const PROMPTS: [&str; 5] = [
    "The capital of France is",
    "<|im_start|>user\nWhat is 17 * 23?<|im_end|>\n<|im_start|>assistant\n",
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
    "fn main() {",
    "List three colours:",
];

/// Greedy tokens each sequence decodes after its prompt.
const STEPS: usize = 12;

fn model_path(name: &str) -> Option<PathBuf> {
    let path = match local_model_path(name) {
        Ok(path) => path,
        Err(LocalError::ModelMissing { path, .. }) => path,
        Err(e) => panic!("{e}"),
    };
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "no model at {}: run `scripts/fetch-model {name}`",
        path.display()
    );
    eprintln!("skipping: no model at {}", path.display());
    None
}

fn argmax(v: &[f32]) -> u32 {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best as u32
}

/// What one sequence decodes: its greedy tokens and the logits before each.
#[derive(Debug, Default, PartialEq)]
struct Decoded {
    tokens: Vec<u32>,
    logits: Vec<Vec<f32>>,
}

fn open(path: &Path) -> (Llama, Vec<Vec<u32>>) {
    let file = MappedFile::open(path).expect("map");
    let ct = gguf_file::Content::read(&mut file.reader()).expect("gguf");
    let tokenizer = Tokenizer::from_gguf(&ct).expect("tokenizer");
    let prompts = PROMPTS
        .iter()
        .map(|p| tokenizer.encode(p).expect("encode"))
        .collect();
    (
        load(&ct, &file, Weights::Requantize).expect("load"),
        prompts,
    )
}

fn alone(model: &mut Llama, prompt: &[u32]) -> Decoded {
    let mut sequence = model.sequence();
    let mut out = Decoded::default();
    let mut input = prompt.to_vec();
    for _ in 0..STEPS {
        let logits = model
            .forward_batch(&mut [Step {
                sequence: &mut sequence,
                tokens: &input,
            }])
            .expect("forward")
            .to_vec();
        let next = argmax(&logits);
        out.tokens.push(next);
        out.logits.push(logits);
        input = vec![next];
    }
    out
}

/// Sequence `i` joins at pass `2 * i`, so that prompts are pre-filled beside other sequences'
/// decoding, and each leaves after its [`STEPS`] tokens.
fn together(model: &mut Llama, prompts: &[Vec<u32>]) -> Vec<Decoded> {
    let vocab = model.vocab_size();
    let mut sequences: Vec<Sequence> = prompts.iter().map(|_| model.sequence()).collect();
    let mut inputs: Vec<Vec<u32>> = prompts.to_vec();
    let mut out: Vec<Decoded> = prompts.iter().map(|_| Decoded::default()).collect();
    let mut pass = 0;
    while out.iter().any(|d| d.tokens.len() < STEPS) {
        let active: Vec<usize> = (0..prompts.len())
            .filter(|&i| pass >= 2 * i && out[i].tokens.len() < STEPS)
            .collect();
        let mut steps: Vec<Step<'_>> = Vec::new();
        for (i, (sequence, input)) in sequences.iter_mut().zip(&inputs).enumerate() {
            if active.contains(&i) {
                steps.push(Step {
                    sequence,
                    tokens: input,
                });
            }
        }
        let logits = model.forward_batch(&mut steps).expect("forward").to_vec();
        drop(steps);
        assert_eq!(logits.len(), active.len() * vocab);
        for (&i, row) in active.iter().zip(logits.chunks_exact(vocab)) {
            let next = argmax(row);
            out[i].tokens.push(next);
            out[i].logits.push(row.to_vec());
            inputs[i] = vec![next];
        }
        pass += 1;
    }
    out
}

fn same_alone_and_together(name: &str) {
    let Some(path) = model_path(name) else {
        return;
    };
    let (mut model, prompts) = open(&path);
    let each: Vec<Decoded> = prompts.iter().map(|p| alone(&mut model, p)).collect();
    let batched = together(&mut model, &prompts);
    for (i, (a, b)) in each.iter().zip(&batched).enumerate() {
        assert_eq!(a.tokens, b.tokens, "{name}: sequence {i}'s tokens");
        let worst = a
            .logits
            .iter()
            .flatten()
            .zip(b.logits.iter().flatten())
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        assert!(
            worst == 0.0,
            "{name}: sequence {i}'s logits differ by {worst}"
        );
    }
    assert_eq!(
        model.forward(&prompts[0]).map(argmax).expect("forward"),
        each[0].tokens[0],
        "the model's own sequence is untouched by the batch"
    );
}

#[test]
fn smollm2_decodes_the_same_together_as_alone() {
    same_alone_and_together(SMALL_MODEL);
}

#[test]
fn qwen2_decodes_the_same_together_as_alone() {
    same_alone_and_together("qwen2.5-coder-1.5b");
}

#[test]
fn a_sequence_of_another_model_is_refused_and_nothing_changes() {
    let Some(path) = model_path(SMALL_MODEL) else {
        return;
    };
    let (mut model, prompts) = open(&path);
    let mut good = model.sequence();
    let mut foreign = Sequence::default();
    let refused = model.forward_batch(&mut [
        Step {
            sequence: &mut good,
            tokens: &prompts[0],
        },
        Step {
            sequence: &mut foreign,
            tokens: &prompts[1],
        },
    ]);
    assert!(refused.is_err());
    assert!(good.is_empty() && foreign.is_empty());
    let empty = model.forward_batch(&mut [Step {
        sequence: &mut good,
        tokens: &[],
    }]);
    assert!(empty.is_err());
    assert!(model.forward_batch(&mut []).is_err());
    model
        .forward_batch(&mut [Step {
            sequence: &mut good,
            tokens: &prompts[0],
        }])
        .expect("forward");
    assert_eq!(good.len(), prompts[0].len());
    assert!(good.bytes() > 0);
}

/// The same on the kernels of CPUs with less than this one.
#[test]
fn qwen2_decodes_the_same_together_on_the_kernels_of_lesser_cpus() {
    common::on_lesser_kernels("qwen2_decodes_the_same_together_as_alone");
}

/// Concurrent calls on a model that decodes four sequences at once get, token for token, what
/// each gets alone on a model that decodes one, each under its own grammar; and the passes
/// were shared.
#[test]
fn concurrent_calls_decoded_together_get_what_each_gets_alone() {
    let Some(path) = model_path(SMALL_MODEL) else {
        return;
    };
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"answer": {"type": "string", "maxLength": 48}},
        "required": ["answer"],
        "additionalProperties": false
    });
    let prompts: Vec<String> = [
        "What is the capital of France?",
        "Name a colour of the sky at noon.",
        "Write a very long story about a fisherman who lived by the sea and never once caught a fish.",
        "Say hello.",
    ]
    .iter()
    .map(|q| format!("<|im_start|>user\n{q} Answer in JSON.<|im_end|>\n<|im_start|>assistant\n"))
    .collect();
    let one = LocalModel::load(LocalConfig::new(&path)).expect("load");
    let alone: Vec<Vec<u32>> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let schema = (i % 2 == 0).then_some(&schema);
            one.generate(p, schema).expect("generate").tokens
        })
        .collect();
    drop(one);
    let mut config = LocalConfig::new(&path);
    config.sequences = 4;
    let shared = LocalModel::load(config).expect("load");
    let together: Vec<Vec<u32>> = std::thread::scope(|scope| {
        let handles: Vec<_> = prompts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (shared, schema) = (&shared, &schema);
                scope.spawn(move || {
                    let schema = (i % 2 == 0).then_some(schema);
                    shared.generate(p, schema).expect("generate").tokens
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    for (i, (a, b)) in alone.iter().zip(&together).enumerate() {
        assert!(!a.is_empty(), "call {i} generated nothing");
        assert_eq!(a, b, "call {i}");
    }
    let counts = shared
        .batch_counts()
        .expect("a shared model counts its passes");
    let steps: usize = together.iter().map(Vec::len).sum();
    assert!(
        counts.steps > counts.passes,
        "no pass was shared: {counts:?} for {steps} tokens"
    );
}

/// Two calls that start together on a model of two sequences, with no prefix store: the
/// system prompt is pre-filled by one and copied by the other, and both answer as a model of
/// one sequence does.
#[test]
fn the_fixed_prefix_is_computed_once_for_every_sequence() {
    let Some(one) = common::model_with(|_| {}) else {
        return;
    };
    let requests = [
        common::request("What is 17 * 23?", common::tools()),
        common::request("What time is it in Tokyo?", common::tools()),
    ];
    let alone: Vec<_> = requests
        .iter()
        .map(|r| {
            one.reset_cache();
            one.complete_blocking(r).expect("complete").text
        })
        .collect();
    let shared = common::model_with(|c| c.sequences = 2).expect("the model loads");
    let replies: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = requests
            .iter()
            .map(|r| scope.spawn(|| shared.complete_blocking(r).expect("complete")))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let prompt = one
        .tokenizer()
        .encode(&one.render(&requests[0].messages).expect("renders"))
        .expect("encodes");
    let system = one
        .tokenizer()
        .encode(&one.render(&requests[0].messages[..1]).expect("renders"))
        .expect("encodes");
    let reused: Vec<usize> = replies
        .iter()
        .map(|r| r.prompt_tokens_reused.unwrap_or(0) as usize)
        .collect();
    assert_eq!(
        reused.iter().filter(|&&n| n >= system.len() - 8).count(),
        1,
        "one call copies the other's prefix: reused {reused:?} of prompts of about {} tokens",
        prompt.len()
    );
    for (reply, text) in replies.iter().zip(&alone) {
        assert_eq!(&reply.text, text);
    }
}
