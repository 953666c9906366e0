//! `rocketmq-keys.toml`: legacy and rsqlDB rocketmq keys -> current keys, and the rocketmq-flink
//! releases export targets.

use serde::Deserialize;

use super::{require_option, FlinkVersion};
use crate::{ConnectorSchema, Dialects, OptionSpec, Role, Support};

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RocketmqKeys {
    /// Current keys that win a tie between two with the same meaning and role.
    pub preferred: Vec<String>,
    /// Exceptions to the canonical rule, by old key.
    #[serde(rename = "override")]
    pub overrides: Vec<KeyOverride>,
    /// rocketmq-flink releases.
    #[serde(rename = "release")]
    pub releases: Vec<RocketmqFlinkRelease>,
}

/// A meaning that depends on the table's role.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleCanonical {
    /// On a source.
    pub source: String,
    /// On a sink.
    pub sink: String,
}

impl RoleCanonical {
    /// The meaning for `role` (lookups read like sources).
    pub fn for_role(&self, role: Role) -> &str {
        match role {
            Role::Sink => &self.sink,
            Role::Source | Role::Lookup => &self.source,
        }
    }
}

/// What happens to an old key instead of the canonical rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverrideAction {
    /// Removed.
    Drop,
    /// Left for a human.
    Manual,
    /// rsqlDB's `isJsonData`: becomes the table's format.
    Format,
    /// rsqlDB's `type`: becomes the `connector` option.
    Connector,
}

/// An exception to the canonical rule.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyOverride {
    /// The old key.
    pub key: String,
    /// A role-dependent meaning.
    pub canonical: Option<RoleCanonical>,
    /// What happens instead of a rename.
    pub action: Option<OverrideAction>,
    /// Why (for `drop` / `manual`).
    pub reason: Option<String>,
    /// Values that mean the default: the option is removed.
    #[serde(default)]
    pub drop_values: Vec<String>,
}

/// A list per table role.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleLists {
    /// For sources.
    #[serde(default)]
    pub source: Vec<String>,
    /// For sinks.
    #[serde(default)]
    pub sink: Vec<String>,
}

impl RoleLists {
    /// The list for `role` (lookups read like sources).
    pub fn for_role(&self, role: Role) -> &[String] {
        match role {
            Role::Sink => &self.sink,
            Role::Source | Role::Lookup => &self.source,
        }
    }
}

/// How a release names the message-key columns of a sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyColumns {
    /// The option.
    pub key: String,
    /// The separator of its column list.
    pub separator: String,
}

/// A rocketmq-flink release export can target.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RocketmqFlinkRelease {
    /// Its name on the command line (`--rocketmq-flink legacy`).
    pub name: String,
    /// One-line description.
    pub title: String,
    /// Maven coordinates of its jar.
    pub artifact: String,
    /// Jar file name.
    pub jar: String,
    /// Where the jar comes from.
    pub build: String,
    /// The option generation its table factories read.
    pub generation: String,
    /// The Flink release it is built against.
    pub flink: FlinkVersion,
    /// The Flink releases whose APIs it needs.
    pub runs_on: Vec<FlinkVersion>,
    /// Whether it has a `format` option.
    pub formats: bool,
    /// The keys its factories declare, per role.
    pub keys: RoleLists,
    /// The keys its factories require, per role.
    pub required: RoleLists,
    /// The metadata keys it reads (source) and writes (sink).
    pub metadata: RoleLists,
    /// How its sink names the message-key columns.
    pub key_columns: Option<KeyColumns>,
}

impl RocketmqFlinkRelease {
    /// The key this release uses for `canonical` on `role`, among the options of `schema`.
    pub fn key_for<'a>(
        &'a self,
        schema: &ConnectorSchema,
        canonical: &str,
        role: Role,
    ) -> Option<&'a str> {
        self.keys
            .for_role(role)
            .iter()
            .find(|k| {
                schema
                    .option(k)
                    .and_then(|o| o.canonical.as_deref())
                    .is_some_and(|c| c == canonical)
            })
            .map(String::as_str)
    }
}

/// What migrate does with one old rocketmq key on one role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRewrite<'a> {
    /// Renamed to this current option.
    Rename(&'a OptionSpec),
    /// Removed, for the reason given.
    Drop(&'a str),
    /// Left for a human, for the reason given.
    Manual(&'a str),
    /// rsqlDB's `isJsonData`: becomes the table's format.
    Format,
    /// rsqlDB's `type`: becomes the `connector` option.
    Connector,
}

impl RocketmqKeys {
    /// The override for an old key.
    pub fn override_for(&self, key: &str) -> Option<&KeyOverride> {
        self.overrides.iter().find(|o| o.key == key)
    }

    /// The release called `name`.
    pub fn release(&self, name: &str) -> Option<&RocketmqFlinkRelease> {
        self.releases.iter().find(|r| r.name == name)
    }

    /// The current (`rocketmq-dot`) option with `canonical` for `role`, ties broken by
    /// `preferred`.
    pub fn current_option<'a>(
        &self,
        schema: &'a ConnectorSchema,
        canonical: &str,
        role: Role,
    ) -> Option<&'a OptionSpec> {
        let mut candidates = schema.generation("rocketmq-dot").filter(|o| {
            o.canonical.as_deref() == Some(canonical)
                && (o.roles.is_empty() || o.roles.contains(&role))
        });
        let first = candidates.next()?;
        let rest: Vec<&OptionSpec> = candidates.collect();
        if rest.is_empty() {
            return Some(first);
        }
        std::iter::once(first)
            .chain(rest)
            .find(|o| self.preferred.contains(&o.key))
    }

    /// What migrate does with the old key `option` (of generation `legacy` or `rsqldb`) on a
    /// table with `role`; `None` when the key needs no migration.
    pub fn rewrite<'a>(
        &'a self,
        schema: &'a ConnectorSchema,
        option: &'a OptionSpec,
        role: Role,
    ) -> Option<KeyRewrite<'a>> {
        let over = self.override_for(&option.key);
        match over.and_then(|o| o.action) {
            Some(OverrideAction::Drop) => {
                return Some(KeyRewrite::Drop(
                    over?.reason.as_deref().unwrap_or_default(),
                ))
            }
            Some(OverrideAction::Manual) => {
                return Some(KeyRewrite::Manual(
                    over?.reason.as_deref().unwrap_or_default(),
                ))
            }
            Some(OverrideAction::Format) => return Some(KeyRewrite::Format),
            Some(OverrideAction::Connector) => return Some(KeyRewrite::Connector),
            None => {}
        }
        if !matches!(option.support, Support::NeedsMigration { .. }) {
            return None;
        }
        let canonical = over
            .and_then(|o| o.canonical.as_ref())
            .map(|c| c.for_role(role))
            .or(option.canonical.as_deref())?;
        self.current_option(schema, canonical, role)
            .map(KeyRewrite::Rename)
    }

    /// Checks overrides and releases, and that every old key that needs migration has exactly
    /// one current key per role it applies to.
    pub(crate) fn check(&self, dialects: &Dialects) -> Result<(), String> {
        let schema = dialects
            .connector("rocketmq")
            .ok_or_else(|| "no connector `rocketmq`".to_string())?;
        for key in &self.preferred {
            require_option(dialects, "rocketmq", key)?;
        }
        for o in &self.overrides {
            let spec = schema
                .option(&o.key)
                .ok_or_else(|| format!("override `{}` is not a rocketmq option", o.key))?;
            if !matches!(spec.generation.as_deref(), Some("legacy" | "rsqldb")) {
                return Err(format!(
                    "override `{}` is not a legacy or rsqlDB key",
                    o.key
                ));
            }
            let needs_reason = matches!(
                o.action,
                Some(OverrideAction::Drop | OverrideAction::Manual)
            );
            if needs_reason && o.reason.is_none() {
                return Err(format!("override `{}` needs a `reason`", o.key));
            }
        }
        for option in schema
            .options
            .iter()
            .filter(|o| matches!(o.generation.as_deref(), Some("legacy" | "rsqldb")))
            .filter(|o| matches!(o.support, Support::NeedsMigration { .. }))
        {
            let roles: Vec<Role> = if option.roles.is_empty() {
                schema.roles.clone()
            } else {
                option.roles.clone()
            };
            for role in roles {
                if self.rewrite(schema, option, role).is_none() {
                    return Err(format!(
                        "`{}` needs migration but has no current key for a {role:?}",
                        option.key
                    ));
                }
            }
        }
        for release in &self.releases {
            let ctx = |e: String| format!("release `{}`: {e}", release.name);
            for role in [Role::Source, Role::Sink] {
                let keys = release.keys.for_role(role);
                for key in keys
                    .iter()
                    .chain(release.required.for_role(role))
                    .chain(release.key_columns.iter().map(|k| &k.key))
                {
                    require_option(dialects, "rocketmq", key).map_err(ctx)?;
                }
                if let Some(missing) = release
                    .required
                    .for_role(role)
                    .iter()
                    .find(|k| !keys.contains(k))
                {
                    return Err(ctx(format!("required `{missing}` is not among its keys")));
                }
            }
            if !release.runs_on.contains(&release.flink) {
                return Err(ctx("`runs_on` lacks the release it is built for".into()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> (&'static RocketmqKeys, &'static ConnectorSchema) {
        let m = crate::init_mappings().unwrap_or_else(|e| panic!("{e}"));
        let schema = crate::connector("rocketmq").unwrap_or_else(|| panic!("rocketmq"));
        (&m.rocketmq, schema)
    }

    fn renamed(key: &str, role: Role) -> String {
        let (k, schema) = keys();
        let option = schema.option(key).unwrap_or_else(|| panic!("{key}"));
        match k.rewrite(schema, option, role) {
            Some(KeyRewrite::Rename(to)) => to.key.clone(),
            other => panic!("{key}: {other:?}"),
        }
    }

    #[test]
    fn legacy_keys_follow_their_meaning_and_role() {
        assert_eq!(renamed("topic", Role::Source), "rocketmq.source.topic");
        assert_eq!(renamed("topic", Role::Sink), "rocketmq.sink.topic");
        assert_eq!(renamed("tag", Role::Sink), "rocketmq.sink.tag");
        assert_eq!(
            renamed("nameServerAddress", Role::Sink),
            "rocketmq.client.endpoints"
        );
        assert_eq!(renamed("groupName", Role::Source), "rocketmq.source.group");
        assert_eq!(renamed("groupName", Role::Sink), "rocketmq.sink.group");
        // Two current keys mean `send-retry-times`; the preferred one wins.
        assert_eq!(
            renamed("retryTimes", Role::Sink),
            "rocketmq.sink.send.retry.times"
        );
    }

    /// The structured rule and the `migration` text `riffle check` shows agree.
    #[test]
    fn renames_agree_with_the_migration_texts() {
        let (k, schema) = keys();
        for option in &schema.options {
            let Support::NeedsMigration { migration } = &option.support else {
                continue;
            };
            let roles = if option.roles.is_empty() {
                &schema.roles
            } else {
                &option.roles
            };
            for &role in roles {
                if let Some(KeyRewrite::Rename(to)) = k.rewrite(schema, option, role) {
                    assert!(
                        migration.contains(&format!("'{}'", to.key)),
                        "{} -> {} is not what its migration text says: {migration}",
                        option.key,
                        to.key
                    );
                }
            }
        }
    }

    #[test]
    fn overrides_drop_or_leave_keys() {
        let (k, schema) = keys();
        let get = |key: &str| schema.option(key).unwrap_or_else(|| panic!("{key}"));
        assert!(matches!(
            k.rewrite(schema, get("maxThread"), Role::Source),
            Some(KeyRewrite::Drop(_))
        ));
        assert!(matches!(
            k.rewrite(schema, get("msgIsJsonArray"), Role::Source),
            Some(KeyRewrite::Manual(_))
        ));
        assert_eq!(
            k.rewrite(schema, get("isJsonData"), Role::Source),
            Some(KeyRewrite::Format)
        );
        // Current keys need no rewrite.
        assert_eq!(
            k.rewrite(schema, get("rocketmq.source.topic"), Role::Source),
            None
        );
    }

    #[test]
    fn releases_name_their_keys_by_meaning() {
        let (k, schema) = keys();
        let legacy = k.release("legacy").unwrap_or_else(|| panic!("legacy"));
        assert_eq!(
            legacy.key_for(schema, "consumer-group", Role::Source),
            Some("consumerGroup")
        );
        assert_eq!(
            legacy.key_for(schema, "endpoints", Role::Sink),
            Some("nameServerAddress")
        );
        let dot = k.release("1.15.0").unwrap_or_else(|| panic!("1.15.0"));
        assert_eq!(
            dot.key_for(schema, "topic", Role::Sink),
            Some("rocketmq.sink.topic")
        );
        // The FLIP-27 source factory does not declare the endpoints option.
        assert_eq!(dot.key_for(schema, "endpoints", Role::Source), None);
    }
}
