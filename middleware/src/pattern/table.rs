//! A TOML table of pattern = value, as the timeout and limit layers take
//! them (`tools = { "slow_*" = "300s" }`): kept in the order it was written,
//! so that "the first pattern that matches wins" means what the user sees
//! in the file, and compiled once into patterns and checked values.

use super::Pattern;
use crate::config_error::ConfigError;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// Pattern → value, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table<V>(pub Vec<(String, V)>);

impl<V> Default for Table<V> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<V> Table<V> {
    /// Each pattern compiled and each value read by `read`; an error names
    /// the key and the entry: `tools."slow_*": …`.
    pub fn compile<T, E: fmt::Display>(
        &self,
        key: &str,
        read: impl Fn(&V) -> Result<T, E>,
    ) -> Result<Vec<(Pattern, T)>, ConfigError> {
        self.0
            .iter()
            .map(|(pattern, value)| {
                let at = |e: &dyn fmt::Display| ConfigError::at([key, pattern.as_str()], e);
                let compiled = Pattern::new(pattern).map_err(|e| at(&e))?;
                Ok((compiled, read(value).map_err(|e| at(&e))?))
            })
            .collect()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Table<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Entries<V> {
            type Value = Table<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of pattern = value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Table<V>, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, V>()? {
                    entries.push(entry);
                }
                Ok(Table(entries))
            }
        }
        d.deserialize_map(Entries(PhantomData))
    }
}
