//! Finding the JVM library and the JDK's `javac` at run time.
//!
//! Order: `RIFFLE_LIBJVM` (a path to `libjvm`), then `JAVA_HOME`, then the `java` on `PATH`
//! with its symbolic links resolved (Debian's `/usr/bin/java` → `/usr/lib/jvm/.../bin/java`).

use std::env;
use std::path::{Path, PathBuf};

use crate::{JvmError, Result};

#[cfg(target_os = "macos")]
const LIBJVM: &str = "libjvm.dylib";
#[cfg(not(target_os = "macos"))]
const LIBJVM: &str = "libjvm.so";

/// The Java home directories to look in, in order of preference.
fn java_homes() -> Vec<PathBuf> {
    let mut homes = Vec::new();
    if let Some(home) = env::var_os("JAVA_HOME").filter(|h| !h.is_empty()) {
        homes.push(PathBuf::from(home));
    }
    if let Some(java) = on_path("java") {
        if let Some(home) = java
            .canonicalize()
            .ok()
            .and_then(|p| p.parent()?.parent().map(Path::to_path_buf))
        {
            homes.push(home);
        }
    }
    homes
}

fn on_path(tool: &str) -> Option<PathBuf> {
    env::split_paths(&env::var_os("PATH")?)
        .map(|dir| dir.join(tool))
        .find(|p| p.is_file())
}

/// The `libjvm` to load.
pub fn libjvm() -> Result<PathBuf> {
    if let Some(path) = env::var_os("RIFFLE_LIBJVM").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(JvmError::new(format!(
                "RIFFLE_LIBJVM names {}, which does not exist",
                path.display()
            )))
        };
    }
    let homes = java_homes();
    homes
        .iter()
        .flat_map(|h| [h.join("lib/server"), h.join("jre/lib/server")])
        .map(|dir| dir.join(LIBJVM))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            JvmError::new(format!(
                "Java user-defined functions need a Java 17+ runtime, and none was found \
                 (looked for {LIBJVM} under JAVA_HOME and the `java` on PATH{}); install a JDK \
                 or set JAVA_HOME or RIFFLE_LIBJVM",
                if homes.is_empty() {
                    String::new()
                } else {
                    format!(
                        ": {}",
                        homes
                            .iter()
                            .map(|h| h.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            ))
        })
}

/// The JDK's `javac` (the bridge classes are compiled with it on first use).
pub fn javac() -> Result<PathBuf> {
    jdk_tool("javac")
}

/// A JDK tool (`javac`, `jar`) from the Java home, else from `PATH`.
pub fn jdk_tool(name: &str) -> Result<PathBuf> {
    java_homes()
        .into_iter()
        .map(|h| h.join("bin").join(name))
        .find(|p| p.is_file())
        .or_else(|| on_path(name))
        .ok_or_else(|| {
            JvmError::new(format!(
                "Java user-defined functions need a JDK (its `{name}` compiles Riffle's bridge \
                 classes once); none was found under JAVA_HOME or on PATH"
            ))
        })
}

/// The directory of Flink's jars from a PyFlink installation: `RIFFLE_FLINK_LIB`, else the
/// conformance oracle's venv (`RIFFLE_ORACLE_VENV`, default `~/.cache/riffle-oracle-venv`).
pub fn flink_lib() -> Option<PathBuf> {
    if let Some(dir) = env::var_os("RIFFLE_FLINK_LIB").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir)).filter(|d| d.is_dir());
    }
    let venv = env::var_os("RIFFLE_ORACLE_VENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/riffle-oracle-venv"))
        })?;
    let mut libs: Vec<PathBuf> = std::fs::read_dir(venv.join("lib"))
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("site-packages/pyflink/lib"))
        .filter(|p| p.is_dir())
        .collect();
    libs.sort();
    libs.pop()
}
