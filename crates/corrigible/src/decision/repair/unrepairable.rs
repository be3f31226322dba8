//! Why damaged text has no single reading.

/// Why local repair refused: the message says what the model should send instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unrepairable {
    /// No `{` starts an object.
    #[error("no JSON object found: answer with one JSON object")]
    NoObject,
    /// The text ends inside something: it was cut, and any completion is a guess.
    #[error("the reply ends inside {0}: it looks cut off, send the whole object again")]
    Truncated(&'static str),
    /// The same key appears twice in one object.
    #[error(
        "duplicate key \"{0}\" in one object: the value meant is ambiguous, send each key once"
    )]
    DuplicateKey(String),
    /// More than one reading exists.
    #[error("{0}")]
    Ambiguous(String),
    /// A character that no reading of JSON allows here.
    #[error("unexpected {found} at character {offset}: expected {expected}")]
    Unexpected {
        /// What was found (quoted), or `end of text`.
        found: String,
        /// Character offset in the text that was read.
        offset: usize,
        /// What would have been valid.
        expected: &'static str,
    },
    /// Objects or arrays nested deeper than the limit.
    #[error("nested deeper than {0} levels")]
    TooDeep(usize),
}
