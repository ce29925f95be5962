//! What the bench binaries share.

/// A whole number from the environment variable `name`, or `default` when it is unset; an error
/// that names the variable when it is set to something else.
pub fn env_number<T: std::str::FromStr>(name: &str, default: T) -> Result<T, String> {
    match std::env::var(name) {
        Ok(raw) => raw.parse().map_err(|_| format!("{name} must be a whole number, got {raw:?}")),
        Err(_) => Ok(default),
    }
}
