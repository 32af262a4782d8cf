//! Choosing, dropping and renaming fields on the way from source to target.

use reel_core::{Error, FieldSpec, Record, RecordRef, Result};

/// Which fields a conversion writes, and under which names.
///
/// Applied to every record in this order: keep only [`keep`](Self::keep) (in that order),
/// leave out [`drop`](Self::drop), then [`rename`](Self::rename). A name that neither the
/// record has nor its source declares is an error naming it (a typo would otherwise
/// silently write everything), and so is a rename onto a name another written field keeps.
/// A declared field a record lacks (a null cell of a Parquet column, a feature one OFRecord
/// record has and another not) is simply absent from that record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldMap {
    /// Write only these fields, in this order (`--fields a,b`).
    pub keep: Option<Vec<String>>,
    /// Leave these fields out (`--drop a,b`).
    pub drop: Vec<String>,
    /// Write field `old` as `new` (`--rename old=new`).
    pub rename: Vec<(String, String)>,
}

impl FieldMap {
    /// Whether the mapping leaves every record as it is.
    pub fn is_identity(&self) -> bool {
        self.keep.is_none() && self.drop.is_empty() && self.rename.is_empty()
    }

    /// Parses `old=new`.
    pub fn parse_rename(spec: &str) -> Result<(String, String)> {
        match spec.split_once('=') {
            Some((old, new)) if !old.trim().is_empty() && !new.trim().is_empty() => {
                Ok((old.trim().to_string(), new.trim().to_string()))
            }
            _ => Err(Error::invalid_input(format!(
                "rename {spec:?}: expected OLD=NEW with both names given"
            ))),
        }
    }

    /// Refuses a mapping that contradicts itself, whatever the records: a field `--fields`
    /// names twice, or one that `--fields` keeps and `--drop` leaves out.
    pub fn check(&self) -> Result<()> {
        let keep = self.keep.as_deref().unwrap_or_default();
        let repeated = keep.iter().enumerate().find(|(k, n)| keep[..*k].contains(n));
        if let Some((_, twice)) = repeated {
            return Err(Error::invalid_input(format!("--fields names {twice:?} twice")));
        }
        if let Some(both) = keep.iter().find(|n| self.drop.contains(n)) {
            return Err(Error::invalid_input(format!(
                "--fields keeps {both:?} and --drop leaves it out: name it in one of them"
            )));
        }
        Ok(())
    }

    /// The name field `name` is written under (renamed, or as it is).
    pub(crate) fn renamed<'a>(&'a self, name: &'a str) -> &'a str {
        self.rename.iter().find(|(old, _)| old == name).map_or(name, |(_, new)| new)
    }

    /// The name field `name` is written under, or `None` when the mapping leaves it out.
    // Only the Arrow targets ask (a build without them has no caller).
    #[cfg_attr(not(feature = "arrow"), allow(dead_code))]
    pub(crate) fn written_name<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        let kept = self.keep.as_ref().is_none_or(|keep| keep.iter().any(|n| n == name))
            && !self.drop.iter().any(|n| n == name);
        kept.then(|| self.renamed(name))
    }

    /// The schema of the mapped records, given the source's; `None` when a field the
    /// mapping names is not declared (the records themselves then say what is wrong).
    pub(crate) fn apply_schema(&self, schema: &[FieldSpec]) -> Option<Vec<FieldSpec>> {
        let find = |name: &str| schema.iter().find(|f| f.name == name);
        let chosen: Vec<&FieldSpec> = match &self.keep {
            Some(keep) => keep.iter().map(|n| find(n)).collect::<Option<_>>()?,
            None => schema.iter().collect(),
        };
        Some(
            chosen
                .into_iter()
                .filter(|f| !self.drop.contains(&f.name))
                .map(|f| FieldSpec {
                    name: self.renamed(&f.name).to_string(),
                    kind: f.kind.clone(),
                })
                .collect(),
        )
    }

    /// Writes the mapped `record` into `out`; `declared` are the fields its source declares.
    pub(crate) fn apply(
        &self,
        record: &RecordRef<'_>,
        declared: &[FieldSpec],
        out: &mut Record,
    ) -> Result<()> {
        let has = |name: &str| {
            record.iter().any(|(n, _)| n == name) || declared.iter().any(|f| f.name == name)
        };
        let missing = |name: &str, option: &str| {
            let names: Vec<String> = record.iter().map(|(n, _)| format!("{n:?}")).collect();
            Error::invalid_input(format!(
                "{option} names field {name:?}, which the record does not have (its fields: {})",
                names.join(", ")
            ))
        };
        self.check()?;
        for name in self.keep.iter().flatten() {
            if !has(name) {
                return Err(missing(name, "--fields"));
            }
        }
        for name in &self.drop {
            if !has(name) {
                return Err(missing(name, "--drop"));
            }
        }
        let chosen: Vec<&str> = match &self.keep {
            Some(keep) => keep.iter().map(String::as_str).collect(),
            None => record.iter().map(|(n, _)| n).collect(),
        };
        let chosen: Vec<&str> =
            chosen.into_iter().filter(|n| !self.drop.iter().any(|d| d == n)).collect();
        for (old, _) in &self.rename {
            if !has(old) {
                return Err(missing(old, "--rename"));
            }
            let left_out = self.keep.as_ref().is_some_and(|keep| !keep.contains(old))
                || self.drop.contains(old);
            if left_out {
                return Err(Error::invalid_input(format!(
                    "--rename names field {old:?}, which --fields or --drop leaves out"
                )));
            }
        }
        let names: Vec<String> = chosen.iter().map(|n| self.renamed(n).to_string()).collect();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(Error::invalid_input(format!(
                    "after renaming, two fields are called {n:?}"
                )));
            }
        }
        out.clear();
        for (old, new) in chosen.iter().zip(names) {
            if let Some(v) = record.get(old) {
                out.push_value(new, v);
            }
        }
        Ok(())
    }
}
