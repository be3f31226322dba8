//! Arithmetic in the notations people and models write: the calculator tool's evaluator, and
//! the calculations a model states in its text (`20 + 80 + 160 = 460`), checked.

mod claims;
mod expression;
mod functions;
mod lexer;
mod parser;
mod recompute;

pub use claims::{Claim, claims, slips, wrong_claims};
pub use expression::{Evaluation, ExpressionError, MAX_EXPRESSION_CHARS, evaluate, evaluate_noted};
pub use functions::FUNCTIONS;
pub use recompute::{Recomputed, first_wrong_value};
