//! Rebuilds the crate when a migration is added or changed: `sqlx::migrate!` embeds them at
//! compile time, and cargo does not watch the directory on its own.
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
