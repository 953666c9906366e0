//! Riffle's support status for a dialect item, read from the `status` / `reason` / `migration`
//! fields that every data file uses.

/// Whether Riffle handles an item (feature, function, connector, option, …) today.
///
/// The data files spell it as `status = "supported" | "needs-migration" | "unsupported"` with a
/// `migration = "..."` text for `needs-migration` and a `reason = "..."` text for `unsupported`.
/// The policy for choosing a status is documented at the top of `dialects/riffle/features.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Riffle executes the item with Flink's semantics.
    Supported,
    /// Riffle does not run the item as written, but `riffle migrate` rewrites it into a form it does.
    NeedsMigration {
        /// What `riffle migrate` rewrites the item to.
        migration: String,
    },
    /// Riffle rejects the item.
    Unsupported {
        /// Why the item is rejected, shown to the user.
        reason: String,
    },
}

impl Support {
    /// The status word used in the data files (`supported`, `needs-migration`, `unsupported`).
    pub fn status(&self) -> &'static str {
        match self {
            Support::Supported => "supported",
            Support::NeedsMigration { .. } => "needs-migration",
            Support::Unsupported { .. } => "unsupported",
        }
    }

    /// True for [`Support::Supported`].
    pub fn is_supported(&self) -> bool {
        matches!(self, Support::Supported)
    }
}

/// The status fields as they appear in a data file; every item table carries these three keys.
#[derive(Debug, Default, Clone)]
pub(crate) struct RawSupport {
    pub status: Option<String>,
    pub reason: Option<String>,
    pub migration: Option<String>,
}

impl RawSupport {
    /// Resolves a file-level default: `None` when the file gives no `status`.
    pub fn resolve_default(self) -> Result<Option<Support>, String> {
        match self.status {
            Some(_) => self.resolve(None).map(Some),
            None => self.resolve(Some(&Support::Supported)).map(|_| None),
        }
    }

    /// Resolves the fields into a [`Support`], falling back to `inherited` when no `status` is
    /// given. `reason`/`migration` without a matching `status` are data errors.
    pub fn resolve(self, inherited: Option<&Support>) -> Result<Support, String> {
        let RawSupport {
            status,
            reason,
            migration,
        } = self;
        let Some(status) = status else {
            if reason.is_some() || migration.is_some() {
                return Err("`reason`/`migration` given without `status`".to_string());
            }
            return inherited
                .cloned()
                .ok_or_else(|| "missing `status` (and nothing to inherit it from)".to_string());
        };
        match (status.as_str(), reason, migration) {
            ("supported", None, None) => Ok(Support::Supported),
            ("supported", _, _) => Err("`supported` takes no `reason`/`migration`".to_string()),
            ("needs-migration", None, Some(migration)) if !migration.trim().is_empty() => {
                Ok(Support::NeedsMigration { migration })
            }
            ("needs-migration", _, _) => {
                Err("`needs-migration` needs a non-empty `migration` and no `reason`".to_string())
            }
            ("unsupported", Some(reason), None) if !reason.trim().is_empty() => {
                Ok(Support::Unsupported { reason })
            }
            ("unsupported", _, _) => {
                Err("`unsupported` needs a non-empty `reason` and no `migration`".to_string())
            }
            (other, _, _) => Err(format!(
                "unknown status `{other}` (expected supported, needs-migration or unsupported)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(status: Option<&str>, reason: Option<&str>, migration: Option<&str>) -> RawSupport {
        RawSupport {
            status: status.map(str::to_string),
            reason: reason.map(str::to_string),
            migration: migration.map(str::to_string),
        }
    }

    #[test]
    fn resolves_each_status() {
        assert_eq!(
            raw(Some("supported"), None, None).resolve(None),
            Ok(Support::Supported)
        );
        assert_eq!(
            raw(Some("unsupported"), Some("r"), None).resolve(None),
            Ok(Support::Unsupported { reason: "r".into() })
        );
        assert_eq!(
            raw(Some("needs-migration"), None, Some("m")).resolve(None),
            Ok(Support::NeedsMigration {
                migration: "m".into()
            })
        );
    }

    #[test]
    fn inherits_or_rejects_inconsistent_fields() {
        let parent = Support::Supported;
        assert_eq!(
            raw(None, None, None).resolve(Some(&parent)),
            Ok(Support::Supported)
        );
        assert!(raw(None, None, None).resolve(None).is_err());
        assert!(raw(None, Some("r"), None).resolve(Some(&parent)).is_err());
        assert!(raw(Some("unsupported"), None, None).resolve(None).is_err());
        assert!(raw(Some("needs-migration"), Some("r"), None)
            .resolve(None)
            .is_err());
        assert!(raw(Some("supported"), Some("r"), None)
            .resolve(None)
            .is_err());
        assert!(raw(Some("maybe"), None, None).resolve(None).is_err());
    }
}
