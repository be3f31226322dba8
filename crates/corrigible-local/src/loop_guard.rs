//! Cutting degenerate loops: a small model under greedy decoding can repeat the same few
//! tokens until the token bound (`-1675.000000…`, `The sale price is X. The sale price is
//! X. …`). When the output ends in such a loop, the decoder rolls it back to one copy and
//! closes the string it is in, instead of paying for the rest of the bound.

/// Longest repeated unit looked for, in tokens.
const MAX_PERIOD: usize = 32;

/// Shortest loop cut, in tokens: shorter repeats (`1, 1, 1`, `00`) are ordinary text.
const MIN_SPAN: usize = 12;

/// Most loops cut in one generation; after that the token bound alone applies.
pub const MAX_CUTS: usize = 4;

/// A loop at the end of the output: from `start` on, the tokens repeat with `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loop {
    /// Where the repeated part begins.
    pub start: usize,
    /// The length of the repeated unit.
    pub period: usize,
}

impl Loop {
    /// How many tokens to keep: everything before the loop and one copy of its unit.
    pub fn keep(&self) -> usize {
        self.start + self.period
    }
}

/// The loop `tokens` end in, if any: the shortest unit of up to [`MAX_PERIOD`] tokens whose
/// repetition covers at least [`MIN_SPAN`] tokens and two whole copies.
pub fn trailing_loop(tokens: &[u32]) -> Option<Loop> {
    let len = tokens.len();
    (1..=MAX_PERIOD.min(len / 2)).find_map(|period| {
        let mut start = len - period;
        while start > 0 && tokens[start - 1] == tokens[start - 1 + period] {
            start -= 1;
        }
        let span = len - start;
        (span >= MIN_SPAN.max(2 * period)).then_some(Loop { start, period })
    })
}

/// The tokens of `vocab` (id and text) that close a JSON string: those whose text begins
/// with `"`.
pub fn closers<'a>(vocab: impl IntoIterator<Item = (u32, &'a str)>) -> Vec<u32> {
    vocab
        .into_iter()
        .filter(|(_, text)| text.starts_with('"'))
        .map(|(id, _)| id)
        .collect()
}

/// Forces one of `closers` where the logits allow one, so the string the output is in ends;
/// returns false, changing nothing, when none is allowed.
pub fn force_close(logits: &mut [f32], closers: &[u32]) -> bool {
    let allowed = closers
        .iter()
        .any(|&c| logits.get(c as usize).is_some_and(|l| l.is_finite()));
    if !allowed {
        return false;
    }
    let mut keep = vec![f32::NEG_INFINITY; logits.len()];
    for &c in closers {
        if let Some(&l) = logits.get(c as usize) {
            keep[c as usize] = l;
        }
    }
    logits.copy_from_slice(&keep);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_one_token_is_a_loop_once_long_enough() {
        let mut tokens = vec![7, 8, 9];
        tokens.extend([0; 11]);
        assert_eq!(trailing_loop(&tokens), None);
        tokens.push(0);
        assert_eq!(
            trailing_loop(&tokens),
            Some(Loop {
                start: 3,
                period: 1
            })
        );
        assert_eq!(trailing_loop(&tokens).map(|l| l.keep()), Some(4));
    }

    #[test]
    fn a_sentence_said_twice_is_a_loop() {
        let sentence: Vec<u32> = (100..110).collect();
        let mut tokens = vec![1, 2];
        tokens.extend(&sentence);
        tokens.extend(&sentence[..9]);
        assert_eq!(trailing_loop(&tokens), None, "not yet two copies");
        tokens.push(sentence[9]);
        let found = trailing_loop(&tokens).expect("two copies");
        assert_eq!(found.period, 10);
        assert_eq!(found.start, 2);
        assert_eq!(
            &tokens[..found.keep()],
            &[&[1, 2][..], &sentence].concat()[..]
        );
    }

    #[test]
    fn ordinary_output_is_no_loop() {
        assert_eq!(trailing_loop(&[]), None);
        assert_eq!(trailing_loop(&[1, 2, 1, 2, 1, 2]), None);
        let varied: Vec<u32> = (0..200).map(|i| (i * 7 + i / 3) % 50).collect();
        assert_eq!(trailing_loop(&varied), None);
    }

    #[test]
    fn closing_keeps_only_allowed_closers() {
        let closers = closers([(0, "a"), (1, "\""), (2, "\"}"), (3, "b\"")]);
        assert_eq!(closers, [1, 2]);
        let mut logits = vec![1.0, f32::NEG_INFINITY, 0.5, 3.0];
        assert!(force_close(&mut logits, &closers));
        assert_eq!(
            logits,
            [f32::NEG_INFINITY, f32::NEG_INFINITY, 0.5, f32::NEG_INFINITY]
        );
        let mut none = vec![1.0, f32::NEG_INFINITY, f32::NEG_INFINITY];
        assert!(!force_close(&mut none, &closers));
        assert_eq!(none[0], 1.0);
    }
}
