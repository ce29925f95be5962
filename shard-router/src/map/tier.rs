//! A tenant's service tier.

use serde::{Deserialize, Serialize};

/// Service tier of a tenant: drives limits and placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Small limits, shared shards.
    Free,
    /// The default tier.
    #[default]
    Standard,
    /// Large limits; usually pinned to a dedicated shard.
    Premium,
}

impl Tier {
    /// The name stored in the catalog and shown by the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Free => "free",
            Tier::Standard => "standard",
            Tier::Premium => "premium",
        }
    }

    /// Parses a catalog value.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "free" => Some(Tier::Free),
            "standard" => Some(Tier::Standard),
            "premium" => Some(Tier::Premium),
            _ => None,
        }
    }
}
