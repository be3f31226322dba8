//! Where `run` takes its request from: the argument, standard input (`-`) or `--prompt-file`.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, bail};

/// Longest request read from standard input or a file: 1 MiB.
const MAX_PROMPT_BYTES: u64 = 1 << 20;

/// The request: `file`'s text if given, standard input for `-`, else `argument` as written.
pub fn read(argument: Option<&str>, file: Option<&Path>) -> anyhow::Result<String> {
    let text = match (file, argument) {
        (Some(path), _) => {
            let file = std::fs::File::open(path)
                .with_context(|| format!("--prompt-file {}", path.display()))?;
            bounded(file).with_context(|| format!("--prompt-file {}", path.display()))?
        }
        (None, Some("-")) => bounded(std::io::stdin().lock()).context("the prompt on stdin")?,
        (None, Some(text)) => text.to_string(),
        (None, None) => {
            bail!("no request: give it as an argument, `-` for stdin, or --prompt-file")
        }
    };
    if text.trim().is_empty() {
        bail!("the request is empty");
    }
    Ok(text.trim_end().to_string())
}

/// All of `reader` as UTF-8 text, refused past [`MAX_PROMPT_BYTES`].
fn bounded(reader: impl Read) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    reader.take(MAX_PROMPT_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_PROMPT_BYTES {
        bail!("longer than {MAX_PROMPT_BYTES} bytes");
    }
    String::from_utf8(bytes).context("not UTF-8 text")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_is_taken_as_written() {
        assert_eq!(read(Some("What is 2+2?"), None).unwrap(), "What is 2+2?");
    }

    #[test]
    fn a_file_is_read_and_its_trailing_newline_dropped() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, b"What is 2+2?\n").unwrap();
        assert_eq!(read(None, Some(file.path())).unwrap(), "What is 2+2?");
    }

    #[test]
    fn empty_missing_long_and_binary_requests_are_refused() {
        assert!(read(Some("  "), None).is_err());
        assert!(read(None, Some(Path::new("/definitely/not/here.txt"))).is_err());
        assert!(bounded(std::io::repeat(b'a').take(MAX_PROMPT_BYTES + 10)).is_err());
        assert!(bounded(&[0xff, 0xfe][..]).is_err());
    }
}
