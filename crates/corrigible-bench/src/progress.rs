//! The progress bar on stderr (hidden when stderr is not a terminal, or when asked).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar over `total` runs; a hidden one when `show` is false or stderr is no TTY.
pub fn bar(total: u64, show: bool) -> ProgressBar {
    if !show || !std::io::stderr().is_terminal() {
        return ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) =
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} runs  {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}
