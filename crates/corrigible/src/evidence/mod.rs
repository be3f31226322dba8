//! Evidence in the run's text: the numbers a request, an answer or a tool result states, what
//! the request asked about, whether a final answer is grounded in tool results, and where a
//! tool argument's value came from. English-text heuristics, each measured on the corpus.

pub mod claimed_action;
pub mod coverage;
pub mod declined;
pub mod echo;
pub mod grounding;
pub mod implied;
pub mod number_words;
pub mod numbers;
pub mod promised_call;
pub mod provenance;
