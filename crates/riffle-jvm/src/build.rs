//! Compiling Java function sources into a jar with the JDK's tools — for tests and the
//! conformance harness, whose fixture functions live as sources in the repository.
//!
//! The sources compile against Flink's own API jars when a PyFlink installation is found
//! ([`locate::flink_lib`]), proving that a jar built for Flink runs unchanged; otherwise against
//! Riffle's stand-in API (the same classes the JVM runs them with).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::classes::{cache_dir, digest, io_error, javac, tempfile_in, write_flink_api};
use crate::{locate, JvmError, Result};

/// Compiles every `.java` file below `sources` into a jar (cached by content) and returns its
/// path.
pub fn build_jar(sources: &Path) -> Result<PathBuf> {
    let mut files = Vec::new();
    collect_java(sources, &mut files)?;
    files.sort();
    if files.is_empty() {
        return Err(JvmError::new(format!(
            "no .java files below {}",
            sources.display()
        )));
    }
    let flink = locate::flink_lib();
    let contents: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(f).map_err(|e| io_error(f, e)))
        .collect::<Result<_>>()?;
    let against = flink
        .as_ref()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| "riffle-flink-api".into());
    let key = digest(
        files
            .iter()
            .map(|f| f.as_os_str().as_encoded_bytes())
            .chain(contents.iter().map(Vec::as_slice))
            .chain([against.as_bytes()]),
    );
    let dir = cache_dir().join("udf-jars");
    let jar = dir.join(format!("{key:016x}.jar"));
    if jar.is_file() {
        return Ok(jar);
    }
    let staging = tempfile_in(&dir)?;
    let classpath = match &flink {
        Some(lib) => format!("{}/*", lib.display()),
        None => {
            let api_classes = staging.join("flink-api");
            javac(
                &write_flink_api(&staging.join("flink-api-src"))?,
                None,
                &api_classes,
            )?;
            api_classes.display().to_string()
        }
    };
    let classes = staging.join("classes");
    javac(&files, Some(&classpath), &classes)?;
    let tool = locate::jdk_tool("jar")?;
    let built = staging.join("functions.jar");
    let output = Command::new(&tool)
        .arg("cf")
        .arg(&built)
        .arg("-C")
        .arg(&classes)
        .arg(".")
        .output()
        .map_err(|e| JvmError::new(format!("cannot run {}: {e}", tool.display())))?;
    if !output.status.success() {
        return Err(JvmError::new(format!(
            "jar failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    std::fs::rename(&built, &jar).map_err(|e| io_error(&jar, e))?;
    let _ = std::fs::remove_dir_all(&staging);
    Ok(jar)
}

fn collect_java(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| io_error(dir, e))? {
        let path = entry.map_err(|e| io_error(dir, e))?.path();
        if path.is_dir() {
            collect_java(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "java") {
            out.push(path);
        }
    }
    Ok(())
}
