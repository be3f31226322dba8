//! Pre-filled prompt prefixes kept on disk, so that a new process does not pre-fill the
//! system prompt, the tool declarations and the worked examples again.
//!
//! An entry holds the keys and values of one token prefix. It is named by a SHA-256 digest of
//! the model file's identity (path, size, modification time), the weights mode, this crate's
//! version and the prefix's tokens, so a change to any of them is a miss. The tokens are
//! stored in the entry too and checked on load. An entry that cannot be read is a miss, never
//! an error: the prefix is then pre-filled as if there were no store.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use corrigible_llama::{Llama, Weights};
use sha2::{Digest, Sha256};

/// The most bytes the store keeps by default; the entries used least recently go first.
pub const DEFAULT_PREFIX_STORE_BYTES: u64 = 1 << 30;

const ENTRY_MAGIC: &[u8; 8] = b"CRGPFX\0\x01";
const ENTRY_EXTENSION: &str = "kv";
const PARTIAL_EXTENSION: &str = "partial";

/// Whether a partial entry last written at `written` was left by a process that died.
fn stale(written: SystemTime) -> bool {
    written
        .elapsed()
        .is_ok_and(|age| age > std::time::Duration::from_secs(3600))
}

/// A directory of pre-filled prefixes for one model file.
#[derive(Debug, Clone)]
pub struct PrefixStore {
    dir: PathBuf,
    model: [u8; 32],
    max_bytes: u64,
}

impl PrefixStore {
    /// The store in `dir` for the model file at `model_path` loaded as `weights`, holding at
    /// most `max_bytes`. The directory is created when the first entry is saved.
    pub fn new(
        dir: impl Into<PathBuf>,
        model_path: &Path,
        weights: Weights,
        max_bytes: u64,
    ) -> io::Result<Self> {
        let meta = fs::metadata(model_path)?;
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let path = fs::canonicalize(model_path)?;
        let mut hasher = Sha256::new();
        hasher.update(path.to_string_lossy().as_bytes());
        hasher.update([0]);
        hasher.update(meta.len().to_le_bytes());
        hasher.update(modified.to_le_bytes());
        hasher.update(format!("{weights:?}").as_bytes());
        hasher.update([0]);
        hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
        Ok(Self {
            dir: dir.into(),
            model: hasher.finalize().into(),
            max_bytes,
        })
    }

    /// The directory the entries are kept in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entry(&self, tokens: &[u32]) -> PathBuf {
        let mut hasher = Sha256::new();
        hasher.update(self.model);
        for t in tokens {
            hasher.update(t.to_le_bytes());
        }
        let name: String = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        self.dir.join(format!("{name}.{ENTRY_EXTENSION}"))
    }

    /// Loads the keys and values of `tokens` into `llama`'s cache, if an entry holds them.
    /// On a miss, or an entry that cannot be read, the cache is left empty and `false`
    /// returned.
    pub fn load(&self, tokens: &[u32], llama: &mut Llama) -> bool {
        let path = self.entry(tokens);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return false,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot open a cached prefix");
                return false;
            }
        };
        let read = read_entry(&mut BufReader::new(&file), tokens, llama);
        match read {
            Ok(()) => {
                let _ = file.set_modified(SystemTime::now());
                true
            }
            Err(e) => {
                llama.truncate_cache(0);
                tracing::warn!(path = %path.display(), error = %e, "ignoring a cached prefix that cannot be read");
                false
            }
        }
    }

    /// Saves the keys and values `llama` holds for `tokens` (its first `tokens.len()` cached
    /// positions), then removes the entries used least recently while the store holds more
    /// than its bound. Failures are logged, not returned: the store only saves time.
    pub fn save(&self, tokens: &[u32], llama: &Llama) {
        if let Err(e) = self.write(tokens, llama) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "cannot save a pre-filled prefix");
        }
        if let Err(e) = self.evict() {
            tracing::warn!(dir = %self.dir.display(), error = %e, "cannot trim the prefix store");
        }
    }

    fn write(&self, tokens: &[u32], llama: &Llama) -> io::Result<()> {
        if llama.cached_len() < tokens.len() {
            return Err(io::Error::other(
                "the model holds fewer positions than the prefix",
            ));
        }
        fs::create_dir_all(&self.dir)?;
        let path = self.entry(tokens);
        let partial = path.with_extension(format!(
            "{ENTRY_EXTENSION}.{}.{PARTIAL_EXTENSION}",
            std::process::id()
        ));
        let result = (|| {
            let mut out = BufWriter::new(File::create(&partial)?);
            out.write_all(ENTRY_MAGIC)?;
            out.write_all(&(tokens.len() as u64).to_le_bytes())?;
            for t in tokens {
                out.write_all(&t.to_le_bytes())?;
            }
            llama.save_cache(tokens.len(), &mut out)?;
            out.into_inner()
                .map_err(io::IntoInnerError::into_error)?
                .sync_all()?;
            fs::rename(&partial, &path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&partial);
        }
        result
    }

    fn evict(&self) -> io::Result<()> {
        let mut entries = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let path = entry.path();
            let meta = entry.metadata()?;
            let used = meta.modified().unwrap_or(UNIX_EPOCH);
            match path.extension().and_then(|e| e.to_str()) {
                Some(ENTRY_EXTENSION) => entries.push((used, meta.len(), path)),
                Some(PARTIAL_EXTENSION) if stale(used) => fs::remove_file(&path)?,
                _ => {}
            }
        }
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        entries.sort();
        for (_, len, path) in entries {
            if total <= self.max_bytes {
                break;
            }
            fs::remove_file(&path)?;
            total -= len;
        }
        Ok(())
    }
}

fn read_entry(input: &mut impl Read, tokens: &[u32], llama: &mut Llama) -> io::Result<()> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let mut magic = [0u8; ENTRY_MAGIC.len()];
    input.read_exact(&mut magic)?;
    if magic != *ENTRY_MAGIC {
        return Err(invalid("not a prefix entry"));
    }
    let mut word = [0u8; 8];
    input.read_exact(&mut word)?;
    if u64::from_le_bytes(word) != tokens.len() as u64 {
        return Err(invalid("the entry holds another prefix"));
    }
    let mut token = [0u8; 4];
    for &t in tokens {
        input.read_exact(&mut token)?;
        if u32::from_le_bytes(token) != t {
            return Err(invalid("the entry holds another prefix"));
        }
    }
    let len = llama.load_cache(input)?;
    if len != tokens.len() {
        return Err(invalid("the entry's cache does not cover its prefix"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path, model: &Path, max_bytes: u64) -> PrefixStore {
        PrefixStore::new(dir, model, Weights::Requantize, max_bytes).expect("store")
    }

    #[test]
    fn an_entry_is_named_by_the_model_file_and_the_tokens() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let (a, b) = (tmp.path().join("a.gguf"), tmp.path().join("b.gguf"));
        std::fs::write(&a, b"one").expect("write");
        std::fs::write(&b, b"two!").expect("write");
        let dir = tmp.path().join("prefixes");
        let sa = store(&dir, &a, 1);
        assert_eq!(sa.entry(&[1, 2, 3]), store(&dir, &a, 1).entry(&[1, 2, 3]));
        assert_ne!(sa.entry(&[1, 2, 3]), sa.entry(&[1, 2, 4]));
        assert_ne!(sa.entry(&[1, 2, 3]), store(&dir, &b, 1).entry(&[1, 2, 3]));
        let mapped = PrefixStore::new(&dir, &a, Weights::AsShipped, 1).expect("store");
        assert_ne!(sa.entry(&[1, 2, 3]), mapped.entry(&[1, 2, 3]));
        std::fs::write(&a, b"ONE, longer").expect("rewrite");
        assert_ne!(sa.entry(&[1, 2, 3]), store(&dir, &a, 1).entry(&[1, 2, 3]));
        assert!(
            PrefixStore::new(
                &dir,
                &tmp.path().join("missing.gguf"),
                Weights::Requantize,
                1
            )
            .is_err()
        );
    }

    #[test]
    fn the_entries_used_least_recently_go_first_past_the_bound() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let model = tmp.path().join("m.gguf");
        std::fs::write(&model, b"m").expect("write");
        let dir = tmp.path().join("prefixes");
        std::fs::create_dir(&dir).expect("dir");
        let s = store(&dir, &model, 250);
        let now = SystemTime::now();
        for (i, age) in [(0u32, 30u64), (1, 10), (2, 20)] {
            let path = s.entry(&[i]);
            std::fs::write(&path, vec![0u8; 100]).expect("write");
            let file = File::options().write(true).open(&path).expect("open");
            file.set_modified(now - std::time::Duration::from_secs(age))
                .expect("mtime");
        }
        std::fs::write(dir.join("notes.txt"), vec![0u8; 1000]).expect("write");
        let (fresh, dead) = (dir.join("x.kv.1.partial"), dir.join("y.kv.2.partial"));
        for path in [&fresh, &dead] {
            std::fs::write(path, b"part").expect("write");
        }
        File::options()
            .write(true)
            .open(&dead)
            .expect("open")
            .set_modified(now - std::time::Duration::from_secs(7200))
            .expect("mtime");
        s.evict().expect("evict");
        assert!(
            fresh.exists() && !dead.exists(),
            "a partial entry goes after an hour"
        );
        assert!(!s.entry(&[0]).exists(), "the oldest goes");
        assert!(s.entry(&[1]).exists() && s.entry(&[2]).exists());
        assert!(dir.join("notes.txt").exists(), "other files stay");
    }
}
