//! The bridge and Flink-API classes: Java sources embedded in the binary, compiled with the
//! JDK's `javac` into a cache directory the first time a JVM starts (and again only when the
//! sources change).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{locate, JvmError, Result};

macro_rules! sources {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../java/", $path)))),*]
    };
}

/// `(path below java/, content)` of every Java source the JVM's class path is built from.
pub(crate) const SOURCES: &[(&str, &str)] = sources![
    "bridge/riffle/jvm/AggregateCall.java",
    "bridge/riffle/jvm/Bridge.java",
    "bridge/riffle/jvm/Columns.java",
    "bridge/riffle/jvm/FunctionInstance.java",
    "bridge/riffle/jvm/ScalarCall.java",
    "bridge/riffle/jvm/Signature.java",
    "bridge/riffle/jvm/SqlType.java",
    "bridge/riffle/jvm/TableCall.java",
    "flink-api/org/apache/flink/table/annotation/DataTypeHint.java",
    "flink-api/org/apache/flink/table/annotation/FunctionHint.java",
    "flink-api/org/apache/flink/table/annotation/FunctionHints.java",
    "flink-api/org/apache/flink/table/annotation/InputGroup.java",
    "flink-api/org/apache/flink/table/functions/AggregateFunction.java",
    "flink-api/org/apache/flink/table/functions/FunctionContext.java",
    "flink-api/org/apache/flink/table/functions/ImperativeAggregateFunction.java",
    "flink-api/org/apache/flink/table/functions/ScalarFunction.java",
    "flink-api/org/apache/flink/table/functions/TableFunction.java",
    "flink-api/org/apache/flink/table/functions/UserDefinedFunction.java",
    "flink-api/org/apache/flink/types/Row.java",
    "flink-api/org/apache/flink/util/Collector.java",
];

/// Riffle's cache directory (`RIFFLE_CACHE_DIR`, else `$XDG_CACHE_HOME/riffle`, else
/// `~/.cache/riffle`).
pub(crate) fn cache_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("RIFFLE_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("riffle");
    }
    match var("HOME") {
        Some(home) => PathBuf::from(home).join(".cache/riffle"),
        None => std::env::temp_dir().join("riffle-cache"),
    }
}

/// A stable 64-bit FNV-1a digest (the cache key of compiled sources).
pub(crate) fn digest<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for part in parts {
        for &b in part {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        hash ^= 0xff;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The directory holding the compiled bridge and Flink-API classes, compiling them if needed.
pub(crate) fn compiled() -> Result<PathBuf> {
    let key = digest(
        SOURCES
            .iter()
            .flat_map(|(p, s)| [p.as_bytes(), s.as_bytes()]),
    );
    let dir = cache_dir().join("jvm").join(format!("{key:016x}"));
    let classes = dir.join("classes");
    if classes.join("riffle/jvm/Bridge.class").is_file() {
        return Ok(classes);
    }
    let staging = tempfile_in(&dir)?;
    let src = staging.join("src");
    let mut files = Vec::new();
    for (path, content) in SOURCES {
        let file = src.join(path);
        write(&file, content)?;
        files.push(file);
    }
    let out = staging.join("classes");
    javac(&files, None, &out)?;
    // Another process may have finished first; either copy is complete.
    if std::fs::rename(&out, &classes).is_err() && !classes.is_dir() {
        return Err(JvmError::new(format!(
            "cannot move compiled classes to {}",
            classes.display()
        )));
    }
    let _ = std::fs::remove_dir_all(&staging);
    Ok(classes)
}

/// Writes the Flink-API stand-in sources below `dir` (for compiling functions without Flink's jars).
pub(crate) fn write_flink_api(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for (path, content) in SOURCES {
        if let Some(rel) = path.strip_prefix("flink-api/") {
            let file = dir.join(rel);
            write(&file, content)?;
            files.push(file);
        }
    }
    Ok(files)
}

/// Runs `javac` on `files` into `out`, with an optional class path.
pub(crate) fn javac(files: &[PathBuf], classpath: Option<&str>, out: &Path) -> Result<()> {
    let javac = locate::javac()?;
    std::fs::create_dir_all(out).map_err(|e| io_error(out, e))?;
    let mut cmd = Command::new(&javac);
    cmd.arg("-nowarn")
        .arg("-encoding")
        .arg("UTF-8")
        .arg("-d")
        .arg(out);
    if let Some(cp) = classpath {
        cmd.arg("-cp").arg(cp);
    }
    cmd.args(files);
    let output = cmd
        .output()
        .map_err(|e| JvmError::new(format!("cannot run {}: {e}", javac.display())))?;
    if !output.status.success() {
        return Err(JvmError::new(format!(
            "javac failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(())
}

fn write(file: &Path, content: &str) -> Result<()> {
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
    }
    std::fs::write(file, content).map_err(|e| io_error(file, e))
}

/// A fresh directory inside `dir` (unique per process and call).
pub(crate) fn tempfile_in(dir: &Path) -> Result<PathBuf> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!("tmp-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&path).map_err(|e| io_error(&path, e))?;
    Ok(path)
}

pub(crate) fn io_error(path: &Path, e: std::io::Error) -> JvmError {
    JvmError::new(format!("{}: {e}", path.display()))
}
