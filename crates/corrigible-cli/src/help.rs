//! Shell completions and man pages, generated from the same argument definitions as
//! `--help`.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;

use crate::args::Cli;

/// Prints the completion script for `shell` to standard output.
pub fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "corrigible", &mut script);
    write_out(&script, "completion script")
}

/// Prints a man page as roff to standard output: corrigible(1), or corrigible-SUBCOMMAND(1).
pub fn man(subcommand: Option<&str>) -> ExitCode {
    let mut command = Cli::command();
    command.build();
    let page = match subcommand {
        None => command,
        Some(name) => match command.find_subcommand(name) {
            Some(sub) => {
                let full = format!("corrigible-{}", sub.get_name());
                sub.clone()
                    .name(full)
                    .bin_name(format!("corrigible {name}"))
                    .version(env!("CARGO_PKG_VERSION"))
            }
            None => {
                let known: Vec<&str> = command
                    .get_subcommands()
                    .map(|s| s.get_name())
                    .filter(|n| *n != "help")
                    .collect();
                eprintln!(
                    "error: no subcommand `{name}`: man pages exist for {}",
                    known.join(", ")
                );
                return ExitCode::from(2);
            }
        },
    };
    let mut roff = Vec::new();
    if let Err(e) = clap_mangen::Man::new(page).render(&mut roff) {
        eprintln!("error: cannot render the man page: {e}");
        return ExitCode::from(2);
    }
    write_out(&roff, "man page")
}

/// Writes `bytes` to standard output; a reader that closed the pipe early is not an error.
fn write_out(bytes: &[u8], what: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write the {what}: {e}");
            ExitCode::from(2)
        }
    }
}
